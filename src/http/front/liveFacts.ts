import { batchWork, mayWait } from "../../domain/waiting/waitingOn.js"
import type { BatchRow } from "../../projections/batchReads.js"
import { etaOfRow } from "../eta.js"
import type { FrontReply, LiveFacts } from "./protocol.js"

/** How long a batch's facts answer reads, and after how long a read asks for newer ones without waiting for them. */
export const FACTS_MAX_AGE_MS = 1_000
export const FACTS_REFRESH_AFTER_MS = 250
const MAX_BATCHES = 10_000

interface Kept {
  readonly facts: LiveFacts
  readonly at: number
  /** The read model's lifecycle sequence they were asked at (lifecycleSeq.ts). */
  readonly version: number
  refreshing: boolean
}

type AskLive = (rows: ReadonlyArray<BatchRow>) => Promise<FrontReply>

/**
 * An unfinished batch's queue estimate and `waiting_on`, which only the dispatch process knows: asked
 * for, then kept up to a second, and asked for again in the background after a quarter of one, so
 * that a read of a running batch does not wait on the dispatch process's loop (most of what a polled
 * read took under load: B12). What the batch's own row decides is decided here, never from what was
 * kept: a final or closing batch, or one with nothing waiting to start, waits on nothing. Nothing kept
 * outlives a command: a batch created, closed or deleted, or an account changed, moves the read model's
 * lifecycle sequence, and what was asked before it is asked again.
 */
export const makeLiveFacts = (askLive: AskLive, now: () => number = Date.now) => {
  const kept = new Map<string, Kept>()
  const liveOf = (reply: FrontReply) => (reply.ok ? reply.live : undefined)
  const keep = (rows: ReadonlyArray<BatchRow>, live: ReadonlyArray<LiveFacts>, at: number, version: number) => {
    if (kept.size + rows.length > MAX_BATCHES) kept.clear()
    rows.forEach((row, i) => kept.set(row.id, { facts: live[i]!, at, version, refreshing: false }))
  }
  const refresh = (aging: ReadonlyArray<{ readonly known: Kept; readonly row: BatchRow }>, version: number) => {
    for (const { known } of aging) known.refreshing = true
    const rows = aging.map(({ row }) => row)
    const at = now()
    void askLive(rows).then((reply) => {
      const live = liveOf(reply)
      if (live !== undefined) keep(rows, live, at, version)
      else for (const { known } of aging) known.refreshing = false
    })
  }

  /** Each row's facts by batch id, or undefined when the dispatch process could not be asked; `version` is the read's lifecycle sequence. */
  return async (rows: ReadonlyArray<BatchRow>, version: number): Promise<ReadonlyMap<string, LiveFacts> | undefined> => {
    const at = now()
    const facts = new Map<string, LiveFacts>()
    const missing: Array<BatchRow> = []
    const aging: Array<{ readonly known: Kept; readonly row: BatchRow }> = []
    for (const row of rows) {
      // Final or closing, it waits on nothing either.
      const decided = etaOfRow(row)
      if (decided !== undefined) facts.set(row.id, { eta: decided, waiting: null })
      else {
        const known = kept.get(row.id)
        if (known === undefined || known.version !== version || at - known.at >= FACTS_MAX_AGE_MS) missing.push(row)
        else {
          // Nothing waits to start: the estimate may still be kept, `waiting_on` is null whatever was.
          facts.set(row.id, mayWait(batchWork(row)) ? known.facts : { eta: known.facts.eta, waiting: null })
          if (at - known.at >= FACTS_REFRESH_AFTER_MS && !known.refreshing) aging.push({ known, row })
        }
      }
    }
    if (aging.length > 0) refresh(aging, version)
    if (missing.length === 0) return facts
    const live = liveOf(await askLive(missing))
    if (live === undefined) return undefined
    keep(missing, live, at, version)
    missing.forEach((row, i) => facts.set(row.id, live[i]!))
    return facts
  }
}
