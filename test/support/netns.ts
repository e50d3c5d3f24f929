import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * A private network of Linux network namespaces for partition tests: one bridge in the root namespace,
 * one namespace per host joined to it by a veth pair, addresses in the benchmarking range 198.18.0.0/15.
 * A link between two hosts is cut by pointing each one's neighbour entry for the other at a MAC no one
 * has: packets vanish and TCP connections hang, as on a real partition, rather than being refused.
 */

export interface Host {
  readonly name: string
  readonly namespace: string
  readonly address: string
}

export interface Network {
  /** The per-run prefix of every namespace and interface name, `slp<pid>-<n>`. */
  readonly prefix: string
  /** The bridge's own address in the root namespace, where the test driver and the upstream live. */
  readonly rootAddress: string
  readonly hosts: ReadonlyArray<Host>
  host(name: string): Host
  /** Starts `command` inside the host's namespace, its output appended to `logFile`. */
  spawnIn(host: string, command: string, args: ReadonlyArray<string>, options: { env: NodeJS.ProcessEnv; logFile: string; cwd?: string }): ChildProcess
  cut(a: string, b: string): void
  heal(a: string, b: string): void
  isolate(a: string, from: ReadonlyArray<string>): void
  rejoin(a: string, from: ReadonlyArray<string>): void
  /** Cuts and heals `a` from `from` in turns of `minMs`–`maxMs` each for `forMs`, ending healed. */
  flap(a: string, from: ReadonlyArray<string>, options: { forMs: number; minMs?: number; maxMs?: number }): Promise<number>
  /** The links cut now, as "a-b" pairs. */
  cuts(): ReadonlyArray<string>
  /** Kills every process in the namespaces, then deletes them, the veths and the bridge. */
  destroy(): Promise<void>
}

const NOBODY = "02:00:00:00:00:01"
const INSIDE = "eth0"
const CLAIMS = join(tmpdir(), "sluice-netns-claims")
const NAME = /^slp([0-9a-z]+)-/
let runs = 0

const ip = (...args: Array<string>): string => execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
const quietly = (run: () => unknown): void => {
  try {
    run()
  } catch {
    // already gone
  }
}
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Fails loudly where the suite cannot run: it must never pass by skipping its partitions. */
export const requireNetns = (): void => {
  if (process.getuid?.() !== 0) {
    throw new Error("the partition suite needs root (it builds network namespaces, veth pairs and a bridge with ip netns): run it as root, as CI does")
  }
  try {
    ip("netns", "list")
  } catch (error) {
    throw new Error(`the partition suite needs iproute2's ip netns, which failed here: ${String(error)}`)
  }
}

const namespacePids = (namespace: string): Array<number> => {
  try {
    return ip("netns", "pids", namespace).split("\n").filter((l) => l !== "").map(Number)
  } catch {
    return []
  }
}

const killNamespace = async (namespace: string): Promise<void> => {
  for (const pid of namespacePids(namespace)) quietly(() => process.kill(pid, "SIGKILL"))
  for (let i = 0; i < 100 && namespacePids(namespace).some(alive); i++) await sleep(50)
  quietly(() => ip("netns", "del", namespace))
}

const ownerPid = (name: string): number | undefined => {
  const match = NAME.exec(name)
  return match === null ? undefined : Number.parseInt(match[1]!, 36)
}

/** Removes the namespaces, links and subnet claims of earlier runs whose process has died. */
export const removeLeftovers = async (): Promise<void> => {
  const dead = (name: string) => {
    const pid = ownerPid(name)
    return pid !== undefined && !alive(pid)
  }
  const namespaces = ip("netns", "list").split("\n").map((l) => l.split(" ")[0]!).filter((n) => n !== "" && dead(n))
  for (const namespace of namespaces) await killNamespace(namespace)
  const links = ip("-o", "link", "show").split("\n").map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1]).filter((n): n is string => n !== undefined && dead(n))
  for (const link of links) quietly(() => ip("link", "del", link))
  mkdirSync(CLAIMS, { recursive: true })
  for (const claim of readdirSync(CLAIMS)) {
    const pid = Number(readFileSync(join(CLAIMS, claim), "utf8"))
    if (!alive(pid)) rmSync(join(CLAIMS, claim), { force: true })
  }
}

/** A /24 of 198.18.0.0/15 no live run holds: claimed by creating its file, which is atomic. */
const claimSubnet = (): { subnet: string; release: () => void } => {
  mkdirSync(CLAIMS, { recursive: true })
  const start = Math.floor(Math.random() * 512)
  for (let i = 0; i < 512; i++) {
    const k = (start + i) % 512
    const path = join(CLAIMS, String(k))
    try {
      writeFileSync(path, String(process.pid), { flag: "wx" })
    } catch {
      continue
    }
    return { subnet: `198.${18 + (k >> 8)}.${k & 255}`, release: () => rmSync(path, { force: true }) }
  }
  throw new Error(`no free /24 in 198.18.0.0/15: every one is claimed in ${CLAIMS}`)
}

/** Builds the bridge and one namespace per host name (at most 200), each with `lo` up. */
export const buildNetwork = async (names: ReadonlyArray<string>): Promise<Network> => {
  requireNetns()
  await removeLeftovers()
  const prefix = `slp${process.pid.toString(36)}-${(runs++).toString(36)}`
  const bridge = `${prefix}br`
  if (`${prefix}${names.reduce((a, n) => (n.length > a.length ? n : a), "br")}`.length > 15) {
    throw new Error(`interface names under the prefix ${prefix} would pass 15 characters: shorten the host names`)
  }
  const claim = claimSubnet()
  const rootAddress = `${claim.subnet}.1`
  const hosts: Array<Host> = names.map((name, i) => ({ name, namespace: `${prefix}${name}`, address: `${claim.subnet}.${10 + i}` }))
  const children = new Set<ChildProcess>()
  const cut = new Set<string>()
  let destroyed = false
  const destroy = async () => {
    if (destroyed) return
    destroyed = true
    for (const child of children) quietly(() => child.kill("SIGKILL"))
    for (const host of hosts) await killNamespace(host.namespace)
    for (const host of hosts) quietly(() => ip("link", "del", `${prefix}${host.name}`))
    quietly(() => ip("link", "del", bridge))
    claim.release()
  }
  // A worker that exits without its afterAll still takes its processes down; the namespaces go at the next run's start.
  const onExit = () => {
    for (const child of children) quietly(() => child.kill("SIGKILL"))
  }
  process.once("exit", onExit)
  try {
    ip("link", "add", bridge, "type", "bridge")
    ip("addr", "add", `${rootAddress}/24`, "dev", bridge)
    ip("link", "set", bridge, "up")
    for (const host of hosts) {
      const outside = `${prefix}${host.name}`
      ip("netns", "add", host.namespace)
      ip("link", "add", outside, "type", "veth", "peer", "name", INSIDE, "netns", host.namespace)
      ip("link", "set", outside, "master", bridge)
      ip("link", "set", outside, "up")
      ip("-n", host.namespace, "addr", "add", `${host.address}/24`, "dev", INSIDE)
      ip("-n", host.namespace, "link", "set", INSIDE, "up")
      ip("-n", host.namespace, "link", "set", "lo", "up")
    }
  } catch (error) {
    await destroy()
    throw error
  }
  const host = (name: string): Host => {
    const found = hosts.find((h) => h.name === name)
    if (found === undefined) throw new Error(`no host ${name} among ${names.join(", ")}`)
    return found
  }
  const blind = (a: Host, b: Host) => ip("-n", a.namespace, "neigh", "replace", b.address, "lladdr", NOBODY, "dev", INSIDE, "nud", "permanent")
  const see = (a: Host, b: Host) => quietly(() => ip("-n", a.namespace, "neigh", "del", b.address, "dev", INSIDE))
  const pair = (a: string, b: string) => [a, b].sort().join("-")
  const network: Network = {
    prefix,
    rootAddress,
    hosts,
    host,
    spawnIn: (name, command, args, options) => {
      const log = openSync(options.logFile, "a")
      try {
        const child = spawn("ip", ["netns", "exec", host(name).namespace, command, ...args], {
          env: options.env,
          cwd: options.cwd,
          stdio: ["ignore", log, log],
        })
        children.add(child)
        child.once("exit", () => children.delete(child))
        return child
      } finally {
        closeSync(log)
      }
    },
    cut: (a, b) => {
      blind(host(a), host(b))
      blind(host(b), host(a))
      cut.add(pair(a, b))
    },
    heal: (a, b) => {
      see(host(a), host(b))
      see(host(b), host(a))
      cut.delete(pair(a, b))
    },
    isolate: (a, from) => from.forEach((b) => network.cut(a, b)),
    rejoin: (a, from) => from.forEach((b) => network.heal(a, b)),
    flap: async (a, from, { forMs, minMs = 1_000, maxMs = 2_000 }) => {
      const until = Date.now() + forMs
      let flips = 0
      for (let down = true; Date.now() < until; down = !down, flips++) {
        if (down) network.isolate(a, from)
        else network.rejoin(a, from)
        await sleep(Math.min(minMs + Math.random() * (maxMs - minMs), Math.max(0, until - Date.now())))
      }
      network.rejoin(a, from)
      return flips
    },
    cuts: () => [...cut],
    destroy: async () => {
      process.off("exit", onExit)
      await destroy()
    },
  }
  return network
}
