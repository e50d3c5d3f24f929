import { Cause, Chunk, ConfigError } from "effect"
import { CatalogInvalid } from "./config/catalogLayer.js"
import type { SluiceConfig } from "./config/Config.js"
import { LeaseTtlMismatch } from "./actors/lease/natsLeaseStore.js"
import { DataDirInUse } from "./dataDirLock.js"
import { LogUnavailable } from "./eventlog/EventLog.js"

interface Coded {
  readonly code?: unknown
  readonly message?: unknown
  readonly cause?: unknown
}

const codeOf = (e: unknown): string | undefined => {
  for (let at: unknown = e, depth = 0; at !== undefined && at !== null && depth < 5; depth++) {
    const code = (at as Coded).code
    if (typeof code === "string") return code
    at = (at as Coded).cause
  }
  return undefined
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

const dataDirProblem = (config: SluiceConfig, why: string) =>
  `the data directory ${config.dataDir} cannot be written (${why}): make it a writable directory, or set SLUICE_DATA_DIR to one`

/** The one line a known start-up failure is, saying what to do; undefined for any other failure. */
const lineFor = (e: unknown, config: SluiceConfig | undefined): string | undefined => {
  if (ConfigError.isConfigError(e)) return `${String(e).replace(/^(Error: )?\((.*)\)$/, "$2")}: fix the variable (see the README's configuration)`
  if (e instanceof DataDirInUse) {
    const holder = e.pid === undefined ? "another Sluice process" : `another Sluice process (pid ${e.pid})`
    const fix =
      config !== undefined && config.natsUrl._tag === "Some"
        ? "stop it, or give each instance its own SLUICE_DATA_DIR"
        : "the embedded event log serves one instance: stop the other, or run several on NATS (NATS_URL, each with its own SLUICE_DATA_DIR; see docs/scaling.md)"
    return `the data directory ${e.dataDir} is in use by ${holder}: ${fix}`
  }
  if (e instanceof LeaseTtlMismatch) {
    return `${e.message}: give every instance on this NATS the same SLUICE_LEASE_TTL_MS (${e.bucketTtlMs}), or stop them all and delete the buckets sluice-leases and sluice-instances to change it`
  }
  if (e instanceof CatalogInvalid) {
    return `${e.message}: fix the file SLUICE_MODELS names (see the README's model catalog), or unset SLUICE_MODELS to serve the built-in simulator`
  }
  if (e instanceof LogUnavailable) {
    const url = config === undefined ? undefined : config.natsUrl._tag === "Some" ? config.natsUrl.value : undefined
    if (/^cannot connect to /.test(e.message)) {
      return `NATS_URL ${url ?? ""} does not answer (${e.message.replace(/^cannot connect to \S+: /, "")}): start nats-server with JetStream (nats-server -js), fix NATS_URL, or unset it to use the embedded log`
    }
    if (/JetStream is not enabled/.test(e.message)) {
      return `JetStream is off on ${url ?? "the NATS server"}: start nats-server with -js (or jetstream {} in its configuration)`
    }
    if (/is older than 2\.9/.test(e.message)) return `${e.message}: upgrade nats-server to 2.9 or newer`
    const old = /^nats-server (\S+) is older than (\S+), /.exec(e.message)
    if (old !== null && config !== undefined) {
      return `SLUICE_NATS_REPLICAS=${config.natsReplicas} needs nats-server ${old[2]} or newer on every node (found ${old[1]}): older releases can keep different messages in different replicas after a partition (docs/scaling.md); upgrade, or set SLUICE_NATS_ALLOW_OLD_SERVER=true to accept that risk`
    }
    const replicas = /stream \S+ cannot be kept in \d+ replicas \(.*\)$/.exec(e.message)
    if (replicas !== null && config !== undefined) {
      return `SLUICE_NATS_REPLICAS=${config.natsReplicas}: ${replicas[0]}: run a NATS cluster of at least ${config.natsReplicas} JetStream servers and list them in NATS_URL, or lower SLUICE_NATS_REPLICAS`
    }
    if (/^cannot open event log at /.test(e.message) && config !== undefined) return dataDirProblem(config, e.message)
    if (url !== undefined) {
      return `NATS at ${url} did not serve Sluice's stream and buckets as it started (${e.message}), after trying for a minute: check that its servers are up with JetStream and, for SLUICE_NATS_REPLICAS=${config?.natsReplicas ?? 1}, that at least that many are routed to each other; then start Sluice again`
    }
    return undefined
  }
  const code = codeOf(e)
  if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL") {
    const address = config === undefined ? "the address" : `${config.host}:${config.port}`
    if ((e as { _tag?: unknown })._tag === "ServeError") {
      if (code === "EADDRINUSE") return `${address} is already in use: stop what listens there, or set SLUICE_PORT to a free port`
      if (code === "EACCES") return `Sluice may not listen on ${address} (permission denied): set SLUICE_PORT above 1023`
      return `Sluice cannot listen on ${address} (no such local address): set SLUICE_HOST to one of this machine's addresses`
    }
  }
  if (config !== undefined) {
    // A data directory that cannot be created (a file in the way, no permission, a read-only disk), or
    // whose SQLite files cannot be opened for writing.
    if (code !== undefined && ["ENOTDIR", "EACCES", "EPERM", "EROFS", "EEXIST", "ENOENT", "ENOSPC"].includes(code)) {
      return dataDirProblem(config, messageOf(e))
    }
    if (code !== undefined && /^SQLITE_(CANTOPEN|READONLY|PERM|IOERR|FULL)/.test(code)) return dataDirProblem(config, messageOf(e))
  }
  return undefined
}

/**
 * A failure of the service's start as one line saying what to do, for the failures an operator meets:
 * a port in use, a NATS_URL that does not answer or has JetStream off, a catalog that does not parse,
 * a data directory that cannot be written. Undefined for anything else, which is shown in full.
 */
export const startupFailureLine = (cause: Cause.Cause<unknown>, config: SluiceConfig | undefined): string | undefined => {
  for (const e of [...Chunk.toReadonlyArray(Cause.failures(cause)), ...Chunk.toReadonlyArray(Cause.defects(cause))]) {
    const line = lineFor(e, config)
    if (line !== undefined) return line
  }
  return undefined
}
