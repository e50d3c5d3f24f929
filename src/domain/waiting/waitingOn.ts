import { Schema } from "effect"
import type { ModelState } from "./modelState.js"

/** Strongest first: the decider answers the first that holds. */
export const WaitingReasons = [
  "log_unavailable",
  "lease_handover",
  "access_revoked",
  "daily_quota",
  "account_slots",
  "upstream_backoff",
  "giving_way_to_interactive",
  "model_capacity",
  "retry_backoff",
] as const
export type WaitingReason = (typeof WaitingReasons)[number]

export const WaitingOn = Schema.Struct({
  reason: Schema.Literal(...WaitingReasons),
  since: Schema.Int.annotations({ description: "Unix seconds: since when it has waited for this reason" }),
  detail: Schema.String.annotations({ description: "The reason in a sentence, for a person" }),
  model: Schema.optional(Schema.String).annotations({ description: "The model it waits on, for a reason of a model" }),
  retry_after_s: Schema.optional(Schema.NonNegativeInt).annotations({
    description: "upstream_backoff: the Retry-After (seconds) the upstream sent with its last 429/503, when it sent one",
  }),
  until: Schema.optional(Schema.Int).annotations({ description: "daily_quota: Unix seconds of the 00:00 UTC the quota renews at" }),
  next_retry_at: Schema.optional(Schema.Int).annotations({ description: "retry_backoff: Unix seconds of the next row's retry" }),
}).annotations({
  identifier: "WaitingOn",
  description:
    "Why the work is not running at full speed, or null once final or while its rows run (docs/operations.md, waiting_on): " +
    "log_unavailable, lease_handover, access_revoked, daily_quota, account_slots, upstream_backoff, giving_way_to_interactive, " +
    "model_capacity, retry_backoff, the first that holds in that order. The same on every instance within a lease round. An addition to the contract",
})
export interface WaitingOn extends Schema.Schema.Type<typeof WaitingOn> {}

/** What the account's checks answer for its rows now (domain/account/ownerVerdict.ts's verdict). */
export type AccountStanding =
  | { readonly _tag: "Run" }
  | { readonly _tag: "FailBatch" }
  | { readonly _tag: "Pause"; readonly until: number }
  | { readonly _tag: "Wait" }
  | { readonly _tag: "Full"; readonly concurrency: number | null }

/** A model of the work: its published state, or no live owner (`missingSince`: ms, when its last lease was renewed or first seen gone). */
export type ModelFacts =
  | { readonly model: string; readonly _tag: "Owned"; readonly state: ModelState }
  | { readonly model: string; readonly _tag: "Unowned"; readonly missingSince: number }

/** Counts from the read model: no row lists. Times are Unix ms. */
export interface WorkFacts {
  /** Final, or closing (cancelling, failing, expiring): nothing of it waits to start any more. */
  readonly settling: boolean
  /** Rows waiting for a slot (not for a retry). */
  readonly queued: number
  readonly running: number
  /** Rows sleeping until their retry, and the earliest of their retry times. */
  readonly retrying: number
  readonly nextRetryAt: number | undefined
  /** When a row of it last moved (started or settled), else when it was created. */
  readonly movedAt: number
  readonly background: boolean
}

export interface Facts {
  readonly work: WorkFacts
  readonly account: AccountStanding
  readonly models: ReadonlyArray<ModelFacts>
  /** Undefined while the log answers; else since when it has not (ms) and why. */
  readonly log: { readonly since: number; readonly why: string } | undefined
  readonly now: number
}

const seconds = (ms: number) => Math.floor(ms / 1000)
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Why the work waits, or null. Work waits only while it has rows not running: rows queued, or every
 * unsettled row asleep until its retry. The reasons of the log, the leases and the account hold back
 * every row; a model's only its queued rows. `since` is when the reason began or when the work last
 * moved, whichever is later (a batch whose rows moved a moment ago has not waited longer than that),
 * never after `now`.
 */
/** Whether all of the work's unsettled rows sleep until a retry: it waits on nothing but time. */
export const allAsleep = (work: Pick<WorkFacts, "queued" | "running" | "retrying">): boolean =>
  work.queued === 0 && work.running === 0 && work.retrying > 0

/** Whether anything of the work waits to start; when not, it waits on nothing and needs no other fact. */
export const mayWait = (work: Pick<WorkFacts, "settling" | "queued" | "running" | "retrying">): boolean =>
  !work.settling && (work.queued > 0 || allAsleep(work))

/** A batch's rows as its read model counts them: the retries asleep among the idle rows, the rest queued. */
export const batchWork = (row: {
  readonly total: number
  readonly running: number
  readonly completed: number
  readonly failed: number
  readonly cancelled: number
  readonly retrying: number
}): Pick<WorkFacts, "settling" | "queued" | "running" | "retrying"> => {
  const idle = row.total - row.running - row.completed - row.failed - row.cancelled
  const retrying = Math.min(row.retrying, idle)
  return { settling: false, queued: idle - retrying, running: row.running, retrying }
}

export const waitingOn = (facts: Facts): WaitingOn | null => {
  const { work, now } = facts
  if (!mayWait(work)) return null
  const since = (began: number) => seconds(Math.min(now, Math.max(began, work.movedAt)))

  if (facts.log !== undefined) {
    return { reason: "log_unavailable", since: since(facts.log.since), detail: `The event log cannot be reached (${facts.log.why}); nothing starts until it is back` }
  }
  // Its owner is no longer valid: the batch is being failed, not held back.
  if (facts.account._tag === "FailBatch") return null
  const unowned = facts.models.find((m) => m._tag === "Unowned")
  if (unowned?._tag === "Unowned") {
    return {
      reason: "lease_handover",
      since: since(unowned.missingSince),
      detail: `${unowned.model} has no live owner: its lease is changing hands, and its rows start once an instance takes it`,
      model: unowned.model,
    }
  }
  switch (facts.account._tag) {
    case "Wait":
      return { reason: "access_revoked", since: since(work.movedAt), detail: "The account has lost batch access; its rows start once it has it again" }
    case "Pause":
      return {
        reason: "daily_quota",
        since: since(work.movedAt),
        detail: `The account's daily quota is used up; it renews at 00:00 UTC (${iso(facts.account.until)})`,
        until: seconds(facts.account.until),
      }
    case "Full":
      return {
        reason: "account_slots",
        since: since(work.movedAt),
        detail: `Every concurrent-request slot of the account${facts.account.concurrency === null ? "" : ` (${facts.account.concurrency})`} is in use`,
      }
    case "Run":
      break
  }
  if (allAsleep(work)) {
    const at = work.nextRetryAt ?? now
    return {
      reason: "retry_backoff",
      since: since(work.movedAt),
      detail: `Every unsettled row waits for its retry; the next is due at ${iso(at)}`,
      next_retry_at: seconds(at),
    }
  }
  return modelReason(facts.models, work, since)
}

const byStrength = (reasons: ReadonlyArray<WaitingOn>) =>
  [...reasons].sort((a, b) => WaitingReasons.indexOf(a.reason) - WaitingReasons.indexOf(b.reason))[0] ?? null

/**
 * A model holds queued rows back when its slots are all taken (cut by pushback, given to interactive
 * requests, or used by other work), or, for background rows, while interactive requests are in flight.
 * A model whose every slot is the work's own runs it at full speed.
 */
const modelReason = (models: ReadonlyArray<ModelFacts>, work: WorkFacts, since: (began: number) => number): WaitingOn | null =>
  byStrength(
    models.flatMap((m): ReadonlyArray<WaitingOn> => {
      if (m._tag !== "Owned") return []
      const { full, pushback, interactive, backgroundHeld } = m.state
      const model = m.model
      if (full !== undefined && pushback !== undefined) {
        const after = pushback.retryAfterS
        return [{
          reason: "upstream_backoff",
          since: since(pushback.since),
          detail:
            `${model}'s upstream pushed back (429/503): its batch slots are cut to ${pushback.concurrency} of ${pushback.of}` +
            (after === undefined ? "" : `; it asked for ${after} s before more`),
          model,
          ...(after === undefined ? {} : { retry_after_s: after }),
        }]
      }
      if (work.background && backgroundHeld !== undefined) {
        return [{
          reason: "giving_way_to_interactive",
          since: since(backgroundHeld.since),
          detail: `Background-priority rows of ${model} wait while interactive requests are in flight on it`,
          model,
        }]
      }
      if (full !== undefined && interactive !== undefined) {
        return [{
          reason: "giving_way_to_interactive",
          since: since(Math.max(full.since, interactive.since)),
          detail: `${interactive.inFlight} interactive request(s) hold ${interactive.slots} of ${model}'s batch slots, and the rest are in use`,
          model,
        }]
      }
      if (full !== undefined && full.inUse > work.running) {
        return [{
          reason: "model_capacity",
          since: since(full.since),
          detail: `All ${full.limit} batch slot(s) of ${model} are in use by other work`,
          model,
        }]
      }
      return []
    }),
  )
