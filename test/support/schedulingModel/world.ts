import { expect } from "vitest"
import type { Priority } from "../../../src/domain/scheduling/priority.js"
import { simDirective } from "../../../src/sim/Directives.js"
import type { Simulator } from "../../../src/sim/Simulator.js"
import { type Answer, client } from "../client.js"
import type { NatsServer } from "../natsServer.js"
import type { RecordingUpstream } from "../recordingUpstream.js"
import type { Sluice, TestClockControls } from "../sluice.js"
import type { TcpProxy } from "../tcpProxy.js"
import { waitFor } from "../waitFor.js"

/*
 * What the model-based scheduling test (test/scheduling.model.e2e.test.ts) knows of the system it drives:
 * the processes, and every batch, response, stream and flex request it asked for, with what the API
 * showed of them so far.
 */

export const ACCOUNTS = ["acct-a", "acct-b"] as const
export const MODEL_SLOTS = 3
export const ACCOUNT_CONCURRENCY = 2
export const FINAL_BATCH = new Set(["completed", "failed", "expired", "cancelled"])
export const FINAL_RESPONSE = new Set(["completed", "incomplete", "failed", "cancelled"])
export const FINAL_EVENTS = new Set(["batch_completed", "batch_failed", "batch_expired", "batch_cancelled"])

/**
 * `slow` takes over a second of wall-clock time: it is still running while the next steps cancel, crash or
 * wait for a slot. `paced` takes a fifth of a second: a backlog of them keeps its account's slots busy for seconds.
 */
export type Kind = "ok" | "slow" | "paced" | "transient" | "permanent"

/** One request as the upstream sees it: its last user message, unique in a run, which is its identity in the upstream's log. */
export interface Sent {
  /** Unique in a run: a stream item's custom_id, a create's metadata tag. */
  readonly tag: string
  readonly text: string
  readonly kind: Kind
  /** The disruptions (crashes, partitions) before it was sent, one still going on excluded: those after may run it again. */
  readonly since: number
}

export interface Batch {
  readonly id: string
  readonly account: number
  readonly requests: ReadonlyArray<Sent>
  /** What its create asked for, standard when it asked for none: every read shows it. */
  readonly priority: Priority
  /** Its expires_at (the actors' clock, ms); undefined when the test did not see its create answered. */
  readonly startBy: number | undefined
  finalStatus?: string
  /** What the API showed the first time it read the batch final: it must show exactly that ever after. */
  final?: { readonly batch: unknown; readonly rows: ReadonlyArray<unknown> }
  /** The disruptions before it was seen final. */
  until?: number
}

export interface QueuedResponse {
  readonly id: string
  readonly account: number
  readonly sent: Sent
  /** The stream it is an item of; null for a background or flex response. */
  readonly stream: string | null
  /** A blocking flex Response: never listed, never in the feed. */
  readonly flex: boolean
  /** Its own, else its stream's, else standard; a flex one shows none. */
  readonly priority: Priority | undefined
  /** When its window closes (the actors' clock, ms); undefined when the test did not see its create answered. */
  readonly startBy: number | undefined
  finalStatus?: string
  /** The Response the first time the API showed it final: it must show exactly that ever after. */
  final?: unknown
  until?: number
}

export interface Stream {
  readonly id: string
  readonly account: number
  /** Its items' unless an item names its own. */
  readonly priority: Priority
  readonly window: "15m" | "1h" | "24h"
  /** Whether it takes no new items; undefined when a close was asked and may or may not have been stored. */
  closed: boolean | undefined
  archived: boolean | undefined
}

export type FlexEnd = { readonly _tag: "Answered"; readonly answer: Answer } | { readonly _tag: "Lost"; readonly error: string } | { readonly _tag: "Abandoned" }

export interface Flex {
  readonly account: number
  readonly via: number
  readonly endpoint: "chat" | "responses"
  readonly sent: Sent
  /** The instance's generation when it was sent: a restart or crash of it may cut the answer off. */
  readonly generation: number
  /** Whether its instance was (or may still have been) cut off from the log when it was sent. */
  readonly sentWhileAway: boolean
  readonly partitionsBefore: number
  readonly abort: AbortController
  end?: FlexEnd
  /** The disruptions before it ended. */
  until?: number
  checked: boolean
}

/** A create the test sent and may not know the answer of (its instance was cut off): its tag finds it if it was stored. */
export type Unanswered =
  | { readonly _tag: "batch"; readonly account: number; readonly requests: ReadonlyArray<Sent>; readonly priority: Priority }
  | { readonly _tag: "response"; readonly account: number; readonly sent: Sent; readonly stream: string | null; readonly priority: Priority }

export interface Partition {
  readonly which: number
  /** Resolves once the proxy has healed, the cut's length after it began. */
  readonly healed: Promise<void>
}

export interface World {
  readonly sims: ReadonlyArray<Simulator>
  /** Each account's model's upstream log, in front of its simulator. */
  readonly upstreams: ReadonlyArray<RecordingUpstream>
  readonly nats: NatsServer | undefined
  /** Each instance's way to the nats-server, by index (none on the embedded log). */
  readonly proxies: ReadonlyArray<TcpProxy>
  partition: Partition | undefined
  readonly sluices: Array<Sluice & TestClockControls>
  /** How many times each instance was stopped and started again. */
  readonly generations: Array<number>
  /** How many times each instance was cut off. */
  readonly partitions: Array<number>
  /** Each account's key for its work (a revoke replaces it), and a reader key that is never revoked. */
  readonly keys: Array<{ readonly key: string; readonly keyId: string; readonly reader: string }>
  readonly batches: Array<Batch>
  readonly responses: Array<QueuedResponse>
  readonly streams: Array<Stream>
  readonly flexes: Array<Flex>
  /** Creates only a cut instance answered, by tag: a later check takes on those the log stored. */
  readonly unanswered: Map<string, Unanswered>
  /** Accounts whose batches may not start a row now, with the upstream request count when that began. */
  readonly held: Map<number, number>
  /** Accounts that may be standard now: their flex requests would be served at once, outside the batch slots. */
  readonly maybeStandard: Set<number>
  /** Crashes and partitions so far: each may have an instance run again what it was running. */
  disruptions: number
  /** Since when the scheduling checks may judge the order rows started in (priorityChecks.ts). */
  stretch: Stretch | undefined
  /** When the test first saw each batch's or response's lane claimed, by id, then by `<model> <owner>` (wall clock, ms). */
  readonly claims: Map<string, Map<string, number>>
  /** Batches and responses a step may have ended without a start (cancelled, closed, their owner revoked): no longer known to wait. */
  readonly mayHaveEnded: Set<string>
  /** The longest reading of each feed so far (`<account>` or `<account>:<stream>`), as event lines. */
  readonly feeds: Map<string, ReadonlyArray<string>>
  unique: number
}

/** A time from which every model kept its owner and no instance stopped, started or was cut off. */
export interface Stretch {
  /** Wall clock, ms. */
  readonly since: number
  /** The instances' restarts and partitions before it. */
  readonly disruptions: number
  /** Each model's owner and since when it has owned it, as the leases read. */
  readonly leases: string
  /** Each model's owner, by model. */
  readonly owners: ReadonlyMap<string, string | undefined>
}

export const api = (w: World, account?: number, via = 0) =>
  client(w.sluices[via % w.sluices.length]!.url, account === undefined ? undefined : w.keys[account]!.key)
/** Reads with the account's key that is never revoked. */
export const reader = (w: World, account: number, via: number) => client(w.sluices[via % w.sluices.length]!.url, w.keys[account]!.reader)

/** Every instance's TestClock moves by `ms`. */
export const adjustAll = async (w: World, ms: number) => {
  for (const sluice of w.sluices) await sluice.adjust(ms)
}
export const settle = () => new Promise((r) => setTimeout(r, 60))
export const received = (w: World, account: number) => w.sims[account]!.stats().received

/** Whether instance `via` may find the log away: it is cut off, or was and has not been seen ready since. */
export const mayBeAway = (w: World, via: number) => w.partition?.which === via % w.sluices.length
/** What the queued endpoints (batches, responses, streams) answer while the log is away; the feed and chat answer 503. */
export const queuedAway = (answer: Answer) =>
  (answer.status === 404 && answer.body?.error?.code === "batch_inference_unavailable") || answer.status === 503
export const adminAway = (answer: Answer) => answer.status === 503 && answer.body?.error?.code === "service_unavailable"

/** Once a cut instance has healed, waits until it is ready again; a no-op while the cut lasts. */
export const partitionOver = async (w: World) => {
  const cut = w.partition
  if (cut === undefined || w.proxies[cut.which]!.isCut()) return
  const sluice = w.sluices[cut.which]!
  await waitFor(`instance #${cut.which} to be ready after its partition`, async () => (await fetch(`${sluice.url}/readyz`)).status === 200)
  w.partition = undefined
}
/** Lets a partition run to its end, then waits until the instance is ready again. */
export const healed = async (w: World) => {
  await w.partition?.healed
  await partitionOver(w)
}

/** An admin call through instance 0; answers whether it took effect (a cut instance may answer that the log is away). */
export const adminCall = async (w: World, method: string, path: string, body?: unknown) => {
  const answer = await api(w).admin(method, path, body)
  if (adminAway(answer) && mayBeAway(w, 0)) return false
  expect(answer.status, answer.text).toBe(200)
  return true
}

const TEXTS: Record<Kind, (tag: string) => string> = {
  ok: (tag) => `ok ${tag}`,
  slow: (tag) => `slow ${tag} ${simDirective.latency(1_500)}`,
  paced: (tag) => `paced ${tag} ${simDirective.latency(200)}`,
  transient: (tag) => `flaky ${tag} ${simDirective.fail(2, 503)}`,
  permanent: (tag) => `bad ${tag} ${simDirective.status(400)}`,
}
/** A new request of `kind` for the upstream, with its tag (unique in the run). */
export const newRequest = (w: World, kind: Kind): Sent => {
  const tag = `t${w.unique++}`
  return { tag, text: TEXTS[kind](tag), kind, since: w.disruptions - (w.partition === undefined ? 0 : 1) }
}
/** What the simulator answers a request: its text, quoted. */
export const answerTo = (sent: Sent) => `Simulated answer to: ${sent.text.slice(0, 80)}`

/** How often the upstream sees a request of each kind when nothing disrupts it: a transient one fails twice first. */
const CALLS: Record<Kind, number> = { ok: 1, slow: 1, paced: 1, transient: 3, permanent: 1 }

/**
 * No request runs twice, except as documented: a crash runs again what was running, and so may an
 * instance whose lease lapsed while it was cut off. So each disruption during its life allows one more call.
 */
export const expectCallsWithinBound = (w: World, account: number, sent: Sent, until: number | undefined, what: string) => {
  const calls = w.upstreams[account]!.calls(sent.text)
  expect(calls, `${what}: '${sent.text}' reached the upstream ${calls} times`).toBeLessThanOrEqual(CALLS[sent.kind] + (until ?? w.disruptions) - sent.since)
  return calls
}
