/**
 * How instances on one NATS log share an account's concurrent-request slots without a round trip per
 * request. Each instance publishes a report of its requests in flight per account (and its
 * interactive requests per model), and starts a request of an account only while
 *
 *   1. its own count plus the counts in the others' last reports is below the account's `concurrency`, and
 *   2. its own count stays within `UNACKED_GROWTH` of the lowest count it reported since the newest
 *      report that every other instance has acknowledged (a report carries the sequence of the last
 *      report it has read from each of the others).
 *
 * Rule 2 means the others' view of an instance is never more than `UNACKED_GROWTH` below its real
 * count, so with K instances an account has at most `concurrency + (K - 1) * UNACKED_GROWTH` requests
 * in flight. Two more conditions keep that true while instances come and go: an instance starts a
 * request of a limited account only while its own last report has come back to it through the log
 * recently (it reads what the others write), and a report read in the log's order tells every later
 * reader about the instances before it.
 */

/** Requests an instance may start beyond what every other instance has seen of it. */
export const UNACKED_GROWTH = 1

export interface LoadReport {
  readonly instance: string
  /** Tells one run of an instance from the next: a restarted instance counts its reports from 1 again. */
  readonly life: string
  /** This instance's report counter, from 1. */
  readonly seq: number
  /** Requests in flight per account (batch rows and interactive requests together); absent is 0. */
  readonly accounts: Readonly<Record<string, number>>
  /** Interactive requests in flight per model. */
  readonly interactive: Readonly<Record<string, number>>
  /** The `seq` of the last report read from each other instance, by its `life`. */
  readonly seen: Readonly<Record<string, number>>
  /** The instance is stopping: its last report, after its requests have ended. */
  readonly leaving?: boolean
}

interface Sent {
  readonly seq: number
  readonly accounts: Readonly<Record<string, number>>
}

interface Peer {
  readonly report: LoadReport
  readonly heardAt: number
}

export interface SlotSharing {
  readonly self: string
  readonly life: string
  /** By `life`: two runs of one instance id (a restart, or a misconfigured twin) are two peers. */
  readonly peers: ReadonlyMap<string, Peer>
  /** Reports sent from the newest every peer has acknowledged on: each peer's view of this instance is one of them. */
  readonly unacked: ReadonlyArray<Sent>
  readonly nextSeq: number
  /** When this instance last read its own report back from the log. */
  readonly inTouchAt: number | undefined
}

/** A long run of unacknowledged reports is folded into its first, keeping the lowest count of each: a lower bound stays one. */
const UNACKED_LIMIT = 64

export const initialSharing = (self: string, life: string): SlotSharing => ({
  self,
  life,
  peers: new Map(),
  unacked: [],
  nextSeq: 1,
  inTouchAt: undefined,
})

const fold = (a: Sent, b: Sent): Sent => {
  const accounts: Record<string, number> = {}
  for (const id of Object.keys(a.accounts)) accounts[id] = Math.min(a.accounts[id] ?? 0, b.accounts[id] ?? 0)
  return { seq: a.seq, accounts }
}

/** The last report of a stopping instance, once its requests have ended: the others forget it at once. */
export const leavingReport = (state: SlotSharing): LoadReport => ({
  instance: state.self,
  life: state.life,
  seq: state.nextSeq,
  accounts: {},
  interactive: {},
  seen: {},
  leaving: true,
})

/** The report this instance sends now, and its state once it has. */
export const nextReport = (
  state: SlotSharing,
  accounts: Readonly<Record<string, number>>,
  interactive: Readonly<Record<string, number>>,
): readonly [SlotSharing, LoadReport] => {
  const seen: Record<string, number> = {}
  for (const peer of state.peers.values()) seen[peer.report.life] = peer.report.seq
  const report: LoadReport = { instance: state.self, life: state.life, seq: state.nextSeq, accounts, interactive, seen }
  let unacked = [...state.unacked, { seq: report.seq, accounts }]
  if (unacked.length > UNACKED_LIMIT) unacked = [fold(unacked[0]!, unacked[1]!), ...unacked.slice(2)]
  return [{ ...state, nextSeq: state.nextSeq + 1, unacked }, report]
}

const ackedUpTo = (state: SlotSharing): number => {
  let upTo = Number.POSITIVE_INFINITY
  for (const peer of state.peers.values()) upTo = Math.min(upTo, peer.report.seen[state.life] ?? 0)
  return upTo
}

/** Drops the reports before the newest one every peer has read. */
const trim = (state: SlotSharing): SlotSharing => {
  const upTo = ackedUpTo(state)
  let newestAcked = -1
  for (let i = 0; i < state.unacked.length; i++) if (state.unacked[i]!.seq <= upTo) newestAcked = i
  return newestAcked <= 0 ? state : { ...state, unacked: state.unacked.slice(newestAcked) }
}

const sameCounts = (a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>) => {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k])
}

export interface Received {
  readonly state: SlotSharing
  /** The report moved a peer's account counts: this instance reports back so that the peer learns it was read. */
  readonly acknowledge: boolean
}

/** A report read from the log at `now` (ms): a peer's, or this instance's own coming back. */
export const received = (state: SlotSharing, report: LoadReport, now: number): Received => {
  if (report.life === state.life) return { state: { ...state, inTouchAt: now }, acknowledge: false }
  const before = state.peers.get(report.life)
  if (report.leaving === true) {
    if (before === undefined) return { state, acknowledge: false }
    const peers = new Map(state.peers)
    peers.delete(report.life)
    return { state: trim({ ...state, peers }), acknowledge: false }
  }
  if (before !== undefined && before.report.seq > report.seq) return { state, acknowledge: false }
  const peers = new Map(state.peers).set(report.life, { report, heardAt: now })
  const acknowledge = before === undefined || !sameCounts(before.report.accounts, report.accounts)
  return { state: trim({ ...state, peers }), acknowledge }
}

/** Forgets peers not heard from for `ttlMs`: a stopped or cut-off instance's counts lapse. */
export const lapse = (state: SlotSharing, now: number, ttlMs: number): SlotSharing => {
  let peers: Map<string, Peer> | undefined
  for (const [id, peer] of state.peers) {
    if (now - peer.heardAt < ttlMs) continue
    peers ??= new Map(state.peers)
    peers.delete(id)
  }
  return peers === undefined ? state : trim({ ...state, peers })
}

/** Whether this instance read its own report back within half the TTL: it sees what the others report. */
export const inTouch = (state: SlotSharing, now: number, ttlMs: number): boolean =>
  state.inTouchAt !== undefined && now - state.inTouchAt < ttlMs / 2

/** The account's requests in flight on the other instances, as they last reported them. */
export const elsewhere = (state: SlotSharing, accountId: string): number => {
  let n = 0
  for (const peer of state.peers.values()) n += peer.report.accounts[accountId] ?? 0
  return n
}

/** The model's interactive requests in flight on the other instances. */
export const interactiveElsewhere = (state: SlotSharing, modelId: string): number => {
  let n = 0
  for (const peer of state.peers.values()) n += peer.report.interactive[modelId] ?? 0
  return n
}

/** How many requests of the account this instance may have in flight, by rule 2 (the account's `concurrency` aside). */
export const ownCeiling = (state: SlotSharing, accountId: string, now: number, ttlMs: number): number => {
  if (!inTouch(state, now, ttlMs)) return 0
  if (state.peers.size === 0) return Number.POSITIVE_INFINITY
  let lowest = Number.POSITIVE_INFINITY
  for (const sent of state.unacked) lowest = Math.min(lowest, sent.accounts[accountId] ?? 0)
  return (lowest === Number.POSITIVE_INFINITY ? 0 : lowest) + UNACKED_GROWTH
}

/** Whether this instance may start one more request of an account that has `local` in flight here, under `concurrency`. */
export const mayTake = (
  state: SlotSharing,
  accountId: string,
  local: number,
  concurrency: number,
  now: number,
  ttlMs: number,
): boolean => local + elsewhere(state, accountId) < concurrency && local < ownCeiling(state, accountId, now, ttlMs)

/** Whether a request `mayTake` refused has a free slot as far as this instance knows, and waits only for the others to read its reports. */
export const waitsForOthers = (
  state: SlotSharing,
  accountId: string,
  local: number,
  concurrency: number,
  now: number,
  ttlMs: number,
): boolean => local + elsewhere(state, accountId) < concurrency && local >= ownCeiling(state, accountId, now, ttlMs)
