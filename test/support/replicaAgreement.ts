import { connect } from "@nats-io/transport-node"
import { jszOf, type NatsNode, type StreamDetail, streamDetailOf } from "./partitionedDeployment.js"
import { readWith, streamDigest } from "./sluiceStream.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export type ReplicaState = Pick<StreamDetail["state"], "messages" | "bytes" | "first_seq" | "last_seq">

const stateOf = (detail: StreamDetail | undefined): ReplicaState | undefined =>
  detail === undefined
    ? undefined
    : { messages: detail.state.messages, bytes: detail.state.bytes, first_seq: detail.state.first_seq, last_seq: detail.state.last_seq }

/**
 * Each node's own replica of SLUICE (messages, bytes, first and last sequence), from its monitoring
 * endpoint, once all three agree or `withinMs` has passed (followers catch up after a heal).
 */
export const replicaStates = async (nodes: ReadonlyArray<NatsNode>, withinMs = 30_000): Promise<Record<string, ReplicaState | undefined>> => {
  const deadline = Date.now() + withinMs
  for (;;) {
    const states = await Promise.all(nodes.map(async (n) => [n.name, stateOf(await streamDetailOf(n).catch(() => undefined))] as const))
    const distinct = new Set(states.map(([, s]) => JSON.stringify(s)))
    if ((distinct.size === 1 && states[0]![1] !== undefined) || Date.now() > deadline) return Object.fromEntries(states)
    await sleep(500)
  }
}

/**
 * Waits until every node names one JetStream meta leader and one leader of SLUICE, and that leader
 * sees every replica current: a node back from a minority may depose the meta leader with its higher
 * term after the heal, and the JetStream API answers "temporarily unavailable" until a new one is elected.
 */
export const streamSettled = async (nodes: ReadonlyArray<NatsNode>, withinMs = 30_000): Promise<boolean> => {
  const deadline = Date.now() + withinMs
  let settledSince: number | undefined
  while (Date.now() < deadline) {
    const views = await Promise.all(nodes.map((n) => jszOf(n).catch(() => undefined)))
    const metaLeaders = new Set(views.map((v) => v?.metaLeader))
    const leaders = new Set(views.map((v) => v?.stream?.cluster?.leader))
    const leader = views[nodes.findIndex((n) => n.name === [...leaders][0])]?.stream
    const settled =
      metaLeaders.size === 1 && !metaLeaders.has(undefined) && leaders.size === 1 && leader !== undefined &&
      (leader.cluster?.replicas ?? []).every((r) => r.current && r.offline !== true)
    settledSince = settled ? (settledSince ?? Date.now()) : undefined
    // Held for a second, so a deposition right after the rejoin is seen.
    if (settledSince !== undefined && Date.now() - settledSince >= 1_000) return true
    await sleep(250)
  }
  return false
}

/**
 * The stream's content as each node holds it: the digest of every message read while that node leads
 * the stream (an ordered consumer is served by the leader), moving the leadership with step-downs
 * until each node has led once or `tries` step-downs have been made.
 */
export const digestsPerLeader = async (nodes: ReadonlyArray<NatsNode>, tries = 20): Promise<Record<string, string>> => {
  const nc = await connect({ servers: nodes.map((n) => n.url), timeout: 5_000 })
  const digests: Record<string, string> = {}
  const leader = async () => {
    for (let i = 0; i < 100; i++) {
      const states = await Promise.all(nodes.map((n) => streamDetailOf(n).catch(() => undefined)))
      const named = states.map((s) => s?.cluster?.leader).filter((l): l is string => l !== undefined)
      if (named.length === nodes.length && new Set(named).size === 1) return named[0]!
      await sleep(200)
    }
    throw new Error("the nodes do not agree on a leader of SLUICE")
  }
  try {
    for (let i = 0; i <= tries && Object.keys(digests).length < nodes.length; i++) {
      const now = await leader()
      if (digests[now] === undefined) {
        // A step-down's election can leave the API "temporarily unavailable" for a moment: that try is lost.
        const messages = await readWith(nc).catch(() => undefined)
        // The read counts only if the leadership did not move while it ran.
        if (messages !== undefined && (await leader()) === now) digests[now] = streamDigest(messages)
        else {
          await sleep(500)
          continue
        }
      }
      if (Object.keys(digests).length === nodes.length) break
      await nc.request("$JS.API.STREAM.LEADER.STEPDOWN.SLUICE", "", { timeout: 5_000 }).catch(() => undefined)
      for (let j = 0; j < 50 && (await leader().catch(() => now)) === now; j++) await sleep(200)
    }
    return digests
  } finally {
    await nc.close()
  }
}
