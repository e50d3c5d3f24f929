import { Effect } from "effect"
import type { ModelEntry } from "../../config/Catalog.js"
import { heldCalls } from "../../domain/scheduling/batchSlots.js"
import { type LaneTerms, ModelQueue, type Taken } from "../../domain/scheduling/ModelQueue.js"
import type { Priority } from "../../domain/scheduling/priority.js"
import { RateMeter } from "../../domain/scheduling/rate.js"
import type { AdmissionShape } from "../Admission.js"
import type { ModelLoadShape } from "../ModelLoad.js"

/** What the slots need of the upstream caller: how many calls it holds back, and the cap on what it sends. */
export interface CallLimit {
  readonly held: () => number
  readonly limit: (calls: number) => void
}

/** A row taken for a slot: `freeSlot` once the model has answered it, `finish` once it is settled (each once; again does nothing). */
export interface TakenRow extends Taken {
  readonly freeSlot: () => void
  readonly finish: () => void
}

/**
 * One model's batch slots and its turns. A slot is an upstream call: held from the row's take until
 * the model answers. Its log writes are not: the start is appended while the call runs and the settle
 * after the slot is free, so the slots stay busy however long the log takes. `calling` counts the calls
 * at the model and the few (`held`) started beyond its slots, which the upstream thread sends as slots
 * free; `busy` counts rows from take until settled. Rows are taken in the FairQueue's turns, among the
 * batches the account checks let start, by priority and deadline (domain/scheduling/ModelQueue.ts).
 * `now` is the actors' clock: the answers' times measure the model's rate, which deadlines are judged by.
 */
export const makeModelSlots = (model: ModelEntry, load: ModelLoadShape, admission: AdmissionShape, calls: CallLimit, now: () => number) =>
  Effect.gen(function* () {
    const turns = new ModelQueue()
    const answers = new RateMeter()
    // Read again at most once a second of the clock: a take near a deadline asks for it each time.
    let rate: { readonly at: number; readonly perMs: number | undefined } | undefined
    const ratePerMs = () => {
      const at = now()
      if (rate === undefined || at - rate.at >= 1_000) rate = { at, perMs: answers.perMs() }
      return rate.perMs
    }
    const held = heldCalls(model.batchConcurrency)
    // Rows between take and settled: the slots' calls and three times as many waiting for their settles to
    // be stored. With twice the slots, on NATS the slots stood empty in about one moment in eight, every
    // row taken waiting for the log (bench:probe threads --nats, busy and calling sampled every 50 ms).
    const mostBusy = 4 * model.batchConcurrency + held
    let calling = 0
    let busy = 0
    let taking = true
    let serve: ((taken: TakenRow) => void) | undefined
    let pumping = false

    /** Hands `serve` every row that may start now, in turn. */
    const pump = () => {
      pumping = false
      if (serve === undefined) return
      for (let taken = take(); taken !== undefined; taken = take()) serve(taken)
    }
    /** Rows may start: they are taken once the code that said so has run (a slot freed, rows pushed). */
    const wake = () => {
      if (pumping || turns.size === 0) return
      pumping = true
      queueMicrotask(pump)
    }
    const limitCalls = () => {
      if (held > 0) calls.limit(load.batchSlots(model))
    }
    const wakeForFree = () => {
      if (calling < load.batchSlots(model) + held) wake()
    }
    admission.onChange(wakeForFree)
    load.onChange(() => {
      limitCalls()
      wakeForFree()
    })
    load.onFewer(limitCalls)
    limitCalls()

    const mayStart = (accountId: string, batchId: string) => admission.mayStart(accountId, batchId)
    const take = (): TakenRow | undefined => {
      const item =
        !taking || busy >= mostBusy || calling >= load.batchSlots(model) + held
          ? undefined
          : // Background rows give way to interactive traffic altogether: they run only while none is in flight.
            turns.take(mayStart, { now: now(), ratePerMs, backgroundMayRun: load.interactiveInFlight(model) === 0 })
      if (item === undefined) return undefined
      // Taken synchronously with the check above, so no two rows pass it for the last slot.
      calling++
      busy++
      admission.acquire(item.accountId)
      let holdsSlot = true
      let finished = false
      const freeSlot = () => {
        if (!holdsSlot) return
        holdsSlot = false
        calling--
        answers.record(now())
        wake()
      }
      return {
        ...item,
        freeSlot,
        finish: () => {
          if (finished) return
          finished = true
          freeSlot()
          busy--
          admission.release(item.accountId)
          wake()
        },
      }
    }

    return {
      /** `start` runs each row as it is taken, in turn, from now on. */
      serve: (start: (taken: TakenRow) => void) => {
        serve = start
        wake()
      },
      /** `terms` with the batch's first rows; a retry's push keeps them. */
      push: (accountId: string, batchId: string, rows: ReadonlyArray<number>, terms?: LaneTerms) => {
        turns.push(accountId, batchId, rows, terms)
        wakeForFree()
      },
      drop: (batchId: string) => turns.drop(batchId),
      /** No row is taken from now on (shutdown, a lost lease); the running ones go on. */
      stopTaking: () => {
        taking = false
      },
      queued: () => turns.size,
      queuedByAccount: () => turns.sizesByAccount(),
      queuedOf: (priority: Priority) => turns.sizeOf(priority),
      termsOf: (batchId: string) => turns.termsOf(batchId),
      calling: () => calling,
      busy: () => busy,
      inUse: () => Math.max(0, calling - calls.held()),
    }
  })
export type ModelSlots = Effect.Effect.Success<ReturnType<typeof makeModelSlots>>
