import { type ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createConnection } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { serverEnv } from "../../src/config/serverEnv.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { client } from "./client.js"
import { FETCHED_RELEASES, type FetchedRelease, natsBinary } from "./natsReleases.js"
import { buildNetwork, type Network } from "./netns.js"
import { ADMIN_TOKEN, BOOTSTRAP_KEY } from "./sluice.js"
import { waitFor } from "./waitFor.js"

/*
 * A Sluice deployment spread over network namespaces (see netns.ts): three nats-server nodes n1–n3 as
 * one JetStream cluster routed over the bridge, two Sluice processes s1 and s2 on it with the stream in
 * three replicas, and one simulator per model in the root namespace, reachable from every namespace.
 */

export const NATS_NODES = ["n1", "n2", "n3"] as const
export const INSTANCES = ["s1", "s2"] as const
export const MODELS = ["model-a", "model-b"] as const
export const SLOTS = 4
export const LEASE_TTL_MS = 3_000
const CLIENT_PORT = 4222
const ROUTE_PORT = 6222
const MONITOR_PORT = 8222
const HTTP_PORT = 8080
const projectRoot = join(import.meta.dirname, "..", "..")

export type Release = FetchedRelease | "system"

/** The release under test: SLUICE_PARTITION_NATS, the current one by default. */
export const releaseUnderTest = (): Release => {
  const named = process.env.SLUICE_PARTITION_NATS ?? FETCHED_RELEASES[0]
  if (named !== "system" && !(FETCHED_RELEASES as ReadonlyArray<string>).includes(named)) {
    throw new Error(`SLUICE_PARTITION_NATS=${named}: expected one of ${[...FETCHED_RELEASES, "system"].join(", ")}`)
  }
  return named as Release
}

export interface NatsNode {
  readonly name: string
  readonly url: string
  /** The monitoring endpoint's base URL (`-m`), e.g. for /jsz. */
  readonly monitor: string
}

export interface Instance {
  readonly name: string
  readonly url: string
  readonly dataDir: string
  readonly logFile: string
  output(): string
}

export interface Lease {
  readonly model: string
  readonly owner: string
  readonly revision: number
}

export interface PartitionedDeployment {
  readonly network: Network
  readonly release: Release
  readonly nats: ReadonlyArray<NatsNode>
  /** Every node's client URL, comma-separated, as NATS_URL takes it. */
  readonly natsUrl: string
  readonly sims: ReadonlyMap<string, Simulator>
  readonly instances: ReadonlyArray<Instance>
  instance(name: string): Instance
  /** The model leases as the first instance that answers within 2 s reads them. */
  leases(): Promise<ReadonlyArray<Lease>>
  /** The name of the node leading the SLUICE stream, asked of any node that answers. */
  streamLeader(): Promise<string>
  /** Stops everything and removes the namespaces; keeps the logs and data under `root` when `keep`. */
  stop(keep?: boolean): Promise<void>
  readonly root: string
}

export const withTimeout = <A>(what: string, promise: Promise<A>, ms: number): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
    promise.then(
      (a) => (clearTimeout(timer), resolve(a)),
      (e) => (clearTimeout(timer), reject(e)),
    )
  })

const accepts = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host, timeout: 500 })
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
    socket.once("error", () => resolve(false))
  })

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

export const startPartitionedDeployment = async (options: { latencyMs?: number; jitterMs?: number } = {}): Promise<PartitionedDeployment> => {
  const release = releaseUnderTest()
  const binary = natsBinary(release)
  const network = await buildNetwork([...NATS_NODES, ...INSTANCES])
  const root = mkdtempSync(join(tmpdir(), `sluice-partitions-${network.prefix}-`))
  const sims = new Map<string, Simulator>()
  const stop = async (keep = false) => {
    await network.destroy()
    for (const sim of sims.values()) await sim.close()
    if (!keep) rmSync(root, { recursive: true, force: true })
  }
  try {
    for (const [i, model] of MODELS.entries()) {
      sims.set(
        model,
        await startSimulator({ host: network.rootAddress, models: [model], latencyMs: options.latencyMs ?? 100, jitterMs: options.jitterMs ?? 200, seed: 11 + i }),
      )
    }
    const nats: Array<NatsNode> = NATS_NODES.map((name) => {
      const { address } = network.host(name)
      return { name, url: `nats://${address}:${CLIENT_PORT}`, monitor: `http://${address}:${MONITOR_PORT}` }
    })
    const natsUrl = nats.map((n) => n.url).join(",")
    const natsChildren = NATS_NODES.map((name) => {
      const { address } = network.host(name)
      const store = join(root, name)
      mkdirSync(store, { recursive: true })
      const routes = NATS_NODES.filter((other) => other !== name).map((other) => `nats://${network.host(other).address}:${ROUTE_PORT}`)
      return network.spawnIn(
        name,
        binary,
        ["-js", "-n", name, "-a", address, "-p", String(CLIENT_PORT), "-m", String(MONITOR_PORT), "-sd", store,
          "--cluster_name", "sluice-partitions", "--cluster", `nats://${address}:${ROUTE_PORT}`, "--routes", routes.join(",")],
        { env: process.env, logFile: join(root, `${name}.log`) },
      )
    })
    for (const [i, node] of nats.entries()) {
      const { address } = network.host(node.name)
      await waitFor(`nats-server ${node.name} (${release}) accepts on ${address}:${CLIENT_PORT} from the root namespace`, async () => {
        if (exited(natsChildren[i]!)) throw new Error(`nats-server ${node.name} exited:\n${readFileSync(join(root, `${node.name}.log`), "utf8").slice(-3000)}`)
        return accepts(address, CLIENT_PORT)
      }, { timeoutMs: 15_000, everyMs: 100 }).catch((error) => {
        throw new Error(`${String(error)} (no answer over the bridge: is bridged traffic filtered, e.g. br_netfilter with an iptables FORWARD policy of DROP?)`)
      })
    }
    const jsAnswers = async () => {
      const nc = await connect({ servers: nats.map((n) => n.url), timeout: 2_000 })
      try {
        await (await jetstreamManager(nc, { timeout: 2_000 })).getAccountInfo()
        return true
      } catch {
        return false
      } finally {
        await nc.close()
      }
    }
    await waitFor("the NATS cluster has a JetStream meta leader", () => jsAnswers().catch(() => false), { timeoutMs: 30_000, everyMs: 200 })

    const catalog = MODELS.map((id) => ({ id, upstream_url: sims.get(id)!.url, batch_concurrency: SLOTS, timeout_ms: 30_000 }))
    const instances: Array<Instance> = []
    for (const name of INSTANCES) {
      const { address } = network.host(name)
      const dataDir = join(root, `${name}-data`)
      mkdirSync(dataDir, { recursive: true })
      writeFileSync(join(dataDir, "models.json"), JSON.stringify({ models: catalog }))
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...serverEnv,
        NATS_URL: natsUrl,
        SLUICE_NATS_REPLICAS: "3",
        SLUICE_LEASE_TTL_MS: String(LEASE_TTL_MS),
        SLUICE_INSTANCE_ID: name,
        SLUICE_DATA_DIR: dataDir,
        SLUICE_MODELS: join(dataDir, "models.json"),
        SLUICE_HOST: address,
        SLUICE_PORT: String(HTTP_PORT),
        SLUICE_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
        SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
        // The gate names the oldest release Sluice keeps replicas on; this suite measures older ones too.
        ...(release === FETCHED_RELEASES[0] ? {} : { SLUICE_NATS_ALLOW_OLD_SERVER: "true" }),
      }
      for (const key of ["SLUICE_TEST_CLOCK", "SLUICE_TEST_CLOCK_PORT", "SLUICE_TEST_CLOCK_START_MS", "SLUICE_RUN_MODELS"]) delete env[key]
      const logFile = join(root, `${name}.log`)
      const child = network.spawnIn(name, process.execPath, ["bin/server.mjs"], { env, logFile, cwd: projectRoot })
      const url = `http://${address}:${HTTP_PORT}`
      const output = () => readFileSync(logFile, "utf8")
      await waitFor(`Sluice ${name} serves ${url}`, async () => {
        if (exited(child)) throw new Error(`Sluice ${name} exited during start:\n${output().slice(-3000)}`)
        return (await fetch(`${url}/openapi.json`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined))?.ok === true
        // Longer than Sluice's own minute of start-up retries: a fresh 2.10 cluster can answer "no suitable peers
        // for placement" for most of a minute after its meta leader is elected, until every server's stats are in.
      }, { timeoutMs: 75_000, everyMs: 100 })
      instances.push({ name, url, dataDir, logFile, output })
    }

    const instance = (name: string) => {
      const found = instances.find((i) => i.name === name)
      if (found === undefined) throw new Error(`no instance ${name}`)
      return found
    }
    const leases = async (): Promise<ReadonlyArray<Lease>> => {
      const answers = await Promise.allSettled(
        instances.map((i) => withTimeout(`${i.name} /admin/v1/leases`, client(i.url).admin("GET", "/admin/v1/leases"), 2_000)),
      )
      for (const answer of answers) if (answer.status === "fulfilled" && answer.value.status === 200) return answer.value.body.data as ReadonlyArray<Lease>
      throw new Error(`no instance answered /admin/v1/leases: ${answers.map((a) => (a.status === "fulfilled" ? a.value.text : String(a.reason))).join("; ")}`)
    }
    const streamLeader = async () => {
      let leader: string | undefined
      await waitFor("the SLUICE stream has a leader", async () => {
        const states = await Promise.all(nats.map((n) => streamDetailOf(n).catch(() => undefined)))
        leader = states.find((s) => s?.cluster?.leader !== undefined)?.cluster?.leader
        return leader !== undefined
      }, { timeoutMs: 30_000, everyMs: 200 })
      return leader!
    }
    // Each model's lease with its own owner: the scenarios cut an owner, and the other runs the other model.
    await waitFor("each instance to hold one model's lease", async () => {
      const held = await leases().catch(() => [] as ReadonlyArray<Lease>)
      return held.length === MODELS.length && new Set(held.map((l) => l.owner)).size === INSTANCES.length
    }, { timeoutMs: 40_000, everyMs: 200 })
    return { network, release, nats, natsUrl, sims, instances, instance, leases, streamLeader, stop, root }
  } catch (error) {
    await stop(true)
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n(logs kept in ${root})`)
  }
}

export interface StreamDetail {
  readonly name: string
  readonly cluster?: { readonly leader?: string; readonly replicas?: ReadonlyArray<{ name: string; current: boolean; offline?: boolean; lag?: number }> }
  readonly state: { readonly messages: number; readonly bytes: number; readonly first_seq: number; readonly last_seq: number; readonly num_deleted?: number }
}

/** One node's JetStream view from its monitoring endpoint: the meta leader it knows and its copy of SLUICE. */
export const jszOf = async (node: NatsNode): Promise<{ readonly metaLeader?: string; readonly stream?: StreamDetail }> => {
  const response = await fetch(`${node.monitor}/jsz?accounts=true&streams=true`, { signal: AbortSignal.timeout(2_000) })
  const jsz = (await response.json()) as { meta_cluster?: { leader?: string }; account_details?: Array<{ stream_detail?: Array<StreamDetail> }> }
  const stream = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((s) => s.name === "SLUICE")
  return { ...(jsz.meta_cluster?.leader ? { metaLeader: jsz.meta_cluster.leader } : {}), ...(stream === undefined ? {} : { stream }) }
}

/** The SLUICE stream as one node holds it, from its monitoring endpoint. */
export const streamDetailOf = async (node: NatsNode): Promise<StreamDetail | undefined> => (await jszOf(node)).stream
