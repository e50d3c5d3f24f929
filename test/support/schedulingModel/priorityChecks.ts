import { expect } from "vitest"
import type { Priority } from "../../../src/domain/scheduling/priority.js"
import { HIGH_STARTS } from "../../../src/domain/scheduling/shares.js"
import { type StoredEvent, type StoredLane, storedLaneOwner } from "../storedEvents.js"
import { ACCOUNTS, MODEL_SLOTS, type Stretch, type World, api } from "./world.js"

/*
 * The order rows start in between priorities, judged from the upstream's log of arrivals (each model is
 * one account's) and the starts the log stored, over a stretch: a time in which every model kept its owner and no instance stopped,
 * started or was cut off. Whatever a crash or a retry runs again is an arrival like any other.
 *
 * A row waits from when its model's owner had claimed its batch (its lane window in the log: the owner
 * queues the rows as soon as the claim is stored) until it was first taken, unless a step may have ended it
 * otherwise: a cancel of it or its stream, its key revoked or its account suspended (noted by those steps
 * in `mayHaveEnded`), its start-by time come near (the clock moved). Quotas, tiers and the account's
 * slots hold all of an account's batches at once, and so the order among them.
 */

/** How long after a claim is stored its rows are in the owner's queue. */
const QUEUED_AFTER_CLAIM_MS = 100
/** How long after an instance started, stopped or was cut off, or a model changed hands, a stretch starts: the owner takes its batches. */
const SETTLED_WITHIN_MS = 1_500
/**
 * How long before a row's start was stored, or before it arrived, it may have been taken for its slot. Its
 * arrival alone does not bound it: a row whose batch another instance created, or that must read its body
 * from the log, holds its slot while it reads (hundreds of ms on a busy machine), and the start is stored
 * as the call goes out.
 */
const SENT_WITHIN_MS = 200
/**
 * A row whose start-by time is nearer than this may start ahead of its turn for it (at the slowest rate a
 * model can measure, a queue of these tests' size needs about an hour), or expire: it is not judged, nor
 * counted in the shares.
 */
const DEADLINE_HORIZON_MS = 2 * 3_600_000

interface Item {
  readonly account: number
  readonly priority: Priority
  /** Whether it is known to wait from its claim until it starts, unless a step ended it. */
  readonly judged: boolean
  readonly id: string
  readonly startBy: number | undefined
}

/** Notes when each lane claim was first seen in the log. */
export const noteClaims = (w: World, lanes: ReadonlyMap<string, ReadonlyArray<StoredLane>>) => {
  const seen = Date.now()
  for (const [id, windows] of lanes) {
    let claims = w.claims.get(id)
    if (claims === undefined) w.claims.set(id, (claims = new Map()))
    for (const lane of windows) if (!claims.has(`${lane.model} ${lane.owner}`)) claims.set(`${lane.model} ${lane.owner}`, seen)
  }
}

/**
 * Waits a moment for the owner of the account's model to claim a batch or response just created, and
 * notes when it was seen: its rows wait from then. A claim not seen in time is noted by a later check.
 */
export const awaitClaim = async (w: World, id: string, account: number) => {
  const model = `m-${account}`
  const deadline = Date.now() + 1_000
  while (Date.now() < deadline) {
    const owner = await storedLaneOwner({ dataDir: w.sluices[0]!.dataDir, natsUrl: w.nats?.url }, id, model).catch(() => undefined)
    if (owner !== undefined) return noteClaims(w, new Map([[id, [{ model, owner }]]]))
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** When the log stored each request's first start (wall clock), by its text. */
const storedStarts = (w: World, log: ReadonlyMap<string, ReadonlyArray<StoredEvent>>) => {
  const started = new Map<string, number>()
  const note = (id: string, texts: ReadonlyArray<string>) => {
    for (const e of log.get(id) ?? []) {
      const text = e.type === "row_started" && e.row !== undefined ? texts[e.row] : undefined
      if (text !== undefined && e.time !== undefined && !started.has(text)) started.set(text, e.time)
    }
  }
  for (const b of w.batches) note(b.id, b.requests.map((r) => r.text))
  for (const r of w.responses) note(r.id, [r.sent.text])
  return started
}

/** Every request the test made, by its text: batch rows, queued responses and flex requests (standard, not judged). */
const itemsByText = (w: World) => {
  const items = new Map<string, Item>()
  for (const b of w.batches) for (const sent of b.requests) items.set(sent.text, { account: b.account, priority: b.priority, judged: true, id: b.id, startBy: b.startBy })
  for (const r of w.responses) items.set(r.sent.text, { account: r.account, priority: r.priority ?? "standard", judged: !r.flex, id: r.id, startBy: r.startBy })
  for (const f of w.flexes) if (!items.has(f.sent.text)) items.set(f.sent.text, { account: f.account, priority: "standard", judged: false, id: f.sent.tag, startBy: undefined })
  return items
}

/** Each model's owner and since when, as instance 0 reads the leases; undefined when it cannot. */
const readLeases = async (w: World): Promise<Pick<Stretch, "leases" | "owners"> | undefined> => {
  const read = await api(w).admin("GET", "/admin/v1/leases")
  if (read.status !== 200) return undefined
  const leases = (read.body.data as Array<{ model: string; owner: string; since: number }>).map((l) => [l.model, l.owner, l.since] as const).sort()
  // On the embedded log the one instance runs every model (its leases are listed from its first round on).
  if (w.nats === undefined) return { leases: read.body.instance, owners: new Map(ACCOUNTS.map((_, i) => [`m-${i}`, read.body.instance])) }
  const owner = (model: string) => leases.find(([m]) => m === model)?.[1]
  return { leases: JSON.stringify(leases), owners: new Map(ACCOUNTS.map((_, i) => [`m-${i}`, owner(`m-${i}`)])) }
}

const disruptions = (w: World) => w.generations.reduce((a, b) => a + b, 0) + w.partitions.reduce((a, b) => a + b, 0)

/**
 * Judged over the stretch, for each standard or high row while it waited (from its claim, or the
 * stretch's start, until shortly before it first began, or until now if it has not), a row beginning
 * when the earlier of its first start stored in the log and its first arrival:
 * - no background row first begins: background takes only slots nothing else wants;
 * - if it is standard, at most HIGH_STARTS high requests arrive per standard one, plus a round of the
 *   model's slots (taken in one order, arriving in another): high work never starves it. High rows near
 *   their start-by time are left out, as they may start ahead of every turn.
 */
export const checkPriorities = async (w: World, log: ReadonlyMap<string, ReadonlyArray<StoredEvent>>) => {
  if (w.partition !== undefined) {
    w.stretch = undefined
    return
  }
  const leases = await readLeases(w)
  if (w.stretch === undefined || leases === undefined || leases.leases !== w.stretch.leases || disruptions(w) !== w.stretch.disruptions) {
    w.stretch = leases === undefined ? undefined : { since: Date.now() + SETTLED_WITHIN_MS, disruptions: disruptions(w), ...leases }
    return
  }
  const { since, owners } = w.stretch
  const now = Date.now()
  const clock = await w.sluices[0]!.now()
  const items = itemsByText(w)
  const started = storedStarts(w, log)
  for (const account of ACCOUNTS.keys()) {
    const model = `m-${account}`
    const all = w.upstreams[account]!.arrivals()
    const firstAt = new Map<string, number>()
    for (const a of all) if (!firstAt.has(a.text)) firstAt.set(a.text, Math.min(a.at, started.get(a.text) ?? a.at))
    for (const [text, at] of started) if (!firstAt.has(text) && items.get(text)?.account === account) firstAt.set(text, at)
    const arrivals = all.filter((a) => a.at >= since).map((a) => ({ ...a, item: items.get(a.text) }))
    const backgroundFirsts = [...firstAt]
      .filter(([text, at]) => at >= since && items.get(text)?.account === account && items.get(text)?.priority === "background")
      .map(([text, at]) => ({ text, at }))
    const inShares = (a: (typeof arrivals)[number]) => a.item?.priority === "high" && a.item.startBy !== undefined && a.item.startBy - clock > DEADLINE_HORIZON_MS
    for (const [text, item] of items) {
      if (item.account !== account || item.priority === "background" || !item.judged || w.mayHaveEnded.has(item.id)) continue
      if (item.startBy === undefined || item.startBy - clock <= DEADLINE_HORIZON_MS) continue
      const claimed = w.claims.get(item.id)?.get(`${model} ${owners.get(model)}`)
      if (claimed === undefined) continue
      const from = Math.max(claimed + QUEUED_AFTER_CLAIM_MS, since) + SENT_WITHIN_MS
      const started = firstAt.get(text)
      const until = started === undefined ? now : started - SENT_WITHIN_MS
      if (until <= from) continue
      const what = `${ACCOUNTS[account]}: ${item.priority} '${text}' of ${item.id} waited from ${from} to ${until} (stretch since ${since})`
      const jumped = backgroundFirsts.filter((a) => a.at > from && a.at < until)
      expect(jumped.map((a) => `${a.text} at ${a.at}`), `${what}: background rows started meanwhile`).toEqual([])
      if (item.priority !== "standard") continue
      const during = arrivals.filter((a) => a.at > from && a.at < until)
      const high = during.filter(inShares).length
      const standard = during.filter((a) => a.item?.priority === "standard").length
      expect(high, `${what}: ${high} high requests arrived meanwhile, ${standard} standard`).toBeLessThanOrEqual(HIGH_STARTS * (standard + 1) + MODEL_SLOTS)
    }
  }
}
