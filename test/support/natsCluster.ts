import { type ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { currentNatsBinary } from "./natsReleases.js"
import { launchNats, stopProcess } from "./natsServer.js"
import { freePort } from "./ports.js"
import { waitFor } from "./waitFor.js"

export interface ClusterNode {
  /** The server name, which JetStream knows the node by across restarts. */
  readonly name: string
  readonly port: number
  readonly url: string
}

export interface NatsCluster {
  readonly nodes: ReadonlyArray<ClusterNode>
  /** Every node's client URL, comma-separated: what NATS_URL takes. */
  readonly url: string
  /** Kills one node with SIGKILL (the default) or stops it with SIGTERM, keeping its port and store. */
  halt(node: number, signal?: "SIGKILL" | "SIGTERM"): Promise<void>
  /** Starts a halted node again on its port and store; it rejoins the cluster. */
  start(node: number): Promise<void>
  /** The index of the node leading `stream`, asked of any node that answers. */
  leaderOf(stream: string): Promise<number>
  /** Waits until every replica of `stream` is current (after a node has rejoined). */
  replicasCurrent(stream: string, replicas: number): Promise<void>
  /** Stops every node and deletes the stores. */
  stop(): Promise<void>
}

const CLUSTER_NAME = "sluice-test"

/**
 * Three nats-server processes with JetStream on loopback, routed to each other as one cluster; every
 * port is free and outside 4222. Resolves once the cluster has a JetStream meta leader. The current
 * release by default: Sluice refuses replicas on a release older than the one docs/scaling.md names.
 */
export const startNatsCluster = async (size = 3, binary = currentNatsBinary()): Promise<NatsCluster> => {
  const root = mkdtempSync(join(tmpdir(), "sluice-nats-cluster-"))
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()))
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()))
  const nodes: Array<ClusterNode> = ports.map((port, i) => ({ name: `n${i + 1}`, port, url: `nats://127.0.0.1:${port}` }))
  const args = (i: number) => {
    const storeDir = join(root, nodes[i]!.name)
    mkdirSync(storeDir, { recursive: true })
    return [
      "-js",
      "-n", nodes[i]!.name,
      "-a", "127.0.0.1",
      "-p", String(ports[i]),
      "-sd", storeDir,
      "--cluster_name", CLUSTER_NAME,
      "--cluster", `nats://127.0.0.1:${routePorts[i]}`,
      "--routes", routePorts.filter((_, j) => j !== i).map((p) => `nats://127.0.0.1:${p}`).join(","),
    ]
  }
  const children: Array<ChildProcess | undefined> = []
  const stopAll = async () => {
    await Promise.all(children.map((c) => (c === undefined ? undefined : stopProcess(c))))
    rmSync(root, { recursive: true, force: true })
  }
  try {
    for (const i of nodes.keys()) children[i] = await launchNats(binary, ports[i]!, args(i))
  } catch (error) {
    await stopAll()
    throw error
  }
  const url = nodes.map((n) => n.url).join(",")
  const withManager = async <A>(use: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<A>): Promise<A> => {
    const nc = await connect({ servers: nodes.map((n) => n.url), timeout: 2_000 })
    try {
      return await use(await jetstreamManager(nc, { timeout: 2_000 }))
    } finally {
      await nc.close()
    }
  }
  const answers = async <A>(use: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<A>) => {
    try {
      return await withManager(use)
    } catch {
      return undefined
    }
  }
  // The JetStream API answers once the nodes have elected a meta leader.
  await waitFor("the cluster has a JetStream meta leader", async () => (await answers((jsm) => jsm.getAccountInfo())) !== undefined, {
    timeoutMs: 30_000,
    everyMs: 100,
  }).catch(async (error) => {
    await stopAll()
    throw error
  })
  return {
    nodes,
    url,
    halt: async (node, signal = "SIGKILL") => {
      const child = children[node]
      children[node] = undefined
      if (child === undefined) return
      if (signal === "SIGTERM") return stopProcess(child)
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGKILL")
      })
    },
    start: async (node) => {
      if (children[node] !== undefined) throw new Error(`node ${nodes[node]!.name} is running`)
      children[node] = await launchNats(binary, ports[node]!, args(node))
    },
    leaderOf: async (stream) => {
      // While the nodes elect a leader, the JetStream API may not answer.
      let leader: string | undefined
      await waitFor(
        `stream ${stream} has a leader`,
        async () => {
          leader = await answers(async (jsm) => (await jsm.streams.info(stream)).cluster?.leader)
          return leader !== undefined
        },
        { timeoutMs: 30_000, everyMs: 100 },
      )
      const index = nodes.findIndex((n) => n.name === leader)
      if (index < 0) throw new Error(`stream ${stream} has no leader among ${nodes.map((n) => n.name).join(", ")} (${leader})`)
      return index
    },
    replicasCurrent: (stream, replicas) =>
      waitFor(
        `every replica of ${stream} is current`,
        async () => {
          const cluster = await answers(async (jsm) => (await jsm.streams.info(stream)).cluster)
          const current = cluster?.replicas?.filter((r) => r.current && !r.offline) ?? []
          return cluster?.leader !== undefined && current.length === replicas - 1
        },
        { timeoutMs: 30_000, everyMs: 100 },
      ),
    stop: stopAll,
  }
}
