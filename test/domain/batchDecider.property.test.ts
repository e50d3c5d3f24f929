import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type BatchCommand, type Decision, decide } from "../../src/domain/batch/decide.js"
import type { BatchEvent } from "../../src/domain/batch/events.js"
import { type BatchState, evolve, idleRows, initialState, isFinal, replay, rowPhase } from "../../src/domain/batch/state.js"
import { MAX_ATTEMPTS } from "../../src/domain/upstream/retryPolicy.js"
import {
  type Scenario,
  anyEvent,
  batchCreated,
  batchId,
  commandFor,
  completed,
  createdAt,
  permanent,
  retryable,
  scenario,
} from "./arbitraries/batchCommands.js"

interface Turn {
  readonly command: BatchCommand
  readonly before: BatchState
  readonly decision: Decision
  readonly after: BatchState
}

interface Run {
  readonly created: BatchEvent
  readonly turns: ReadonlyArray<Turn>
  readonly emitted: ReadonlyArray<BatchEvent>
}

const emittedBy = (decision: Decision): ReadonlyArray<BatchEvent> => Either.getOrElse(decision, () => [])

const apply = (state: BatchState, decision: Decision) => emittedBy(decision).reduce(evolve, state)

/** Decides each step in turn against the state the events emitted so far have built; rejected steps change nothing. */
const play = ({ total, steps }: Scenario): Run => {
  const created = batchCreated(total)
  let state = evolve(initialState(batchId), created)
  let at = createdAt
  const turns: Array<Turn> = []
  for (const step of steps) {
    at += step.dt
    const command = commandFor(step, state, at)
    const decision = decide(command, state)
    const after = apply(state, decision)
    turns.push({ command, before: state, decision, after })
    state = after
  }
  return { created, turns, emitted: turns.flatMap((turn) => emittedBy(turn.decision)) }
}

const states = (run: Run) => [evolve(initialState(batchId), run.created), ...run.turns.map((turn) => turn.after)]

const comparable = (state: BatchState) => ({
  ...state,
  rows: [...state.rows].sort(([a], [b]) => a - b),
})

const counts = (state: BatchState) => ({
  completed: state.completed,
  failed: state.failed,
  cancelled: state.cancelled,
  running: state.running,
  idle: idleRows(state),
})

/** The counts as the rows tell them; a never-started row of a closed batch was settled the way the batch closed. */
const recount = (state: BatchState) => {
  const tally = { completed: 0, failed: 0, cancelled: 0, running: 0, idle: 0 }
  for (const [, phase] of state.rows) {
    if (phase.status === "running") tally.running++
    else if (phase.status === "queued") tally.idle++
    else if (phase.status === "completed") tally.completed++
    else if (phase.status === "cancelled") tally.cancelled++
    else tally.failed++
  }
  const unstarted = state.total - state.rows.size
  if (state.closedAs === undefined) tally.idle += unstarted
  else if (state.closedAs === "cancelled") tally.cancelled += unstarted
  else tally.failed += unstarted
  return tally
}

const rowsOf = (state: BatchState) => Array.from({ length: state.total }, (_, row) => row)

const failure = { code: "owner_unauthorized", message: "The key that created this batch was revoked" }

const outcomes = fc.sample(fc.tuple(completed, retryable, permanent), { numRuns: 1, seed: 7 })[0] ?? []

/** Every command that could matter to a batch in this state, each row and outcome included. */
const probes = (state: BatchState, at: number): ReadonlyArray<BatchCommand> => [
  { type: "Reconcile", at },
  { type: "Cancel", at },
  { type: "Fail", at, error: failure },
  { type: "Expire", at },
  { type: "Delete", at },
  ...rowsOf(state).flatMap((row): ReadonlyArray<BatchCommand> => {
    const attempt = rowPhase(state, row)?.attempt ?? 1
    return [
      { type: "StartRow", row, at },
      { type: "InterruptRow", row, at },
      ...outcomes.map((outcome): BatchCommand => ({ type: "SettleRow", row, attempt, at, outcome })),
    ]
  }),
]

const rowEvent = (event: BatchEvent) =>
  event.type === "row_started" ||
  event.type === "row_retrying" ||
  event.type === "row_completed" ||
  event.type === "row_failed" ||
  event.type === "row_cancelled"
    ? event
    : undefined

const numRuns = 300

describe("batch decider laws", () => {
  it("request counts always add up: completed + failed + cancelled + running + idle == total, none negative, each equal to a recount of the rows", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const state of states(play(s))) {
          const c = counts(state)
          const r = recount(state)
          const sound =
            c.completed + c.failed + c.cancelled + c.running + c.idle === state.total &&
            Object.values(c).every((n) => n >= 0) &&
            Object.entries(c).every(([k, n]) => r[k as keyof typeof r] === n) &&
            [...state.rows].every(([row]) => row >= 0 && row < state.total)
          if (!sound) expect({ total: state.total, counts: c, rows: [...state.rows] }).toEqual({ total: state.total, counts: r, rows: [] })
        }
      }),
      { numRuns },
    )
  })

  it("final statuses are absorbing: once completed, failed, expired or cancelled, no command changes the status", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const all = states(play(s))
        const first = all.findIndex((state) => isFinal(state.status))
        const final = all[first]
        if (final === undefined) return
        for (const state of all.slice(first)) expect(state.status).toBe(final.status)
        for (const state of [final, all[all.length - 1] ?? final]) {
          for (const command of probes(state, createdAt + 1e9)) expect(apply(state, decide(command, state)).status).toBe(final.status)
        }
      }),
      { numRuns },
    )
  })

  it("after a final status, no command changes the batch: every command but Delete decides nothing", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const all = states(play(s))
        const final = all.find((state) => isFinal(state.status))
        if (final === undefined) return
        for (const state of [final, all[all.length - 1]!]) {
          for (const command of probes(state, createdAt + 1e9)) {
            if (command.type === "Delete") continue
            expect(emittedBy(decide(command, state))).toEqual([])
          }
        }
      }),
      { numRuns },
    )
  })

  it("after a final status, no event changes the batch but its deletion: late row events, second closings, final events of any kind", () => {
    const arb = scenario.chain((s) => fc.tuple(fc.constant(s), fc.array(anyEvent(s.total), { maxLength: 30 })))
    fc.assert(
      fc.property(arb, ([s, late]) => {
        const final = states(play(s)).find((state) => isFinal(state.status))
        if (final === undefined) return
        const after = late.reduce(evolve, final)
        expect(comparable(after)).toEqual(comparable(final))
        expect(evolve(after, { type: "batch_deleted", v: 2, batch_id: batchId, at: createdAt + 1e9, reason: "deleted" }).deleted).toBe(true)
      }),
      { numRuns },
    )
  })

  it("a batch is final only once no row runs: completed, failed, expired and cancelled all wait for the running rows", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const state of states(play(s))) if (isFinal(state.status)) expect(state.running).toBe(0)
      }),
      { numRuns },
    )
  })

  it("whatever views the writers decided from, a log with stale, repeated and foreign-view events still reads as a sound batch: counts add up, a closed batch has no idle row, a final one runs nothing and never changes", () => {
    const arb = scenario.chain((s) =>
      fc.tuple(fc.constant(s), fc.array(fc.tuple(fc.nat(), anyEvent(s.total)), { maxLength: 40 })),
    )
    fc.assert(
      fc.property(arb, ([s, extra]) => {
        const run = play(s)
        const log: Array<BatchEvent> = [run.created, ...run.emitted]
        for (const [at, event] of extra) log.splice(1 + (at % log.length), 0, event)
        let state = initialState(batchId)
        let finalAt: BatchState | undefined
        for (const event of log) {
          state = evolve(state, event)
          const c = counts(state)
          expect(c).toEqual(recount(state))
          expect(Object.values(c).every((n) => n >= 0)).toBe(true)
          if (state.closedAs !== undefined) expect(c.idle).toBe(0)
          if (isFinal(state.status)) expect(state.running).toBe(0)
          if (finalAt !== undefined) expect({ ...comparable(state), deleted: false }).toEqual({ ...comparable(finalAt), deleted: false })
          else if (isFinal(state.status)) finalAt = state
        }
      }),
      { numRuns },
    )
  })

  it("replaying the emitted events reproduces the state built step by step, at every step", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const run = play(s)
        const log: Array<BatchEvent> = [run.created]
        for (const turn of run.turns) {
          log.push(...emittedBy(turn.decision))
          const replayed = comparable(replay(batchId, log))
          const built = comparable(turn.after)
          if (JSON.stringify(replayed) !== JSON.stringify(built)) expect(replayed).toEqual(built)
        }
      }),
      { numRuns },
    )
  })

  it("decisions are idempotent: deciding the same command again right after its events are applied emits nothing, and a rejected command is rejected again with the same tag", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const { command, decision, after } of play(s).turns) {
          const again = decide(command, after)
          if (Either.isLeft(decision)) expect(Either.flip(again).pipe(Either.map((r) => r._tag))).toEqual(Either.right(decision.left._tag))
          else expect(emittedBy(again)).toEqual([])
        }
      }),
      { numRuns },
    )
  })

  it(`no row is attempted more than ${MAX_ATTEMPTS} times: a row's attempts are numbered 1, 2, 3…, each settles the attempt that runs, and a row waits for a retry only with an attempt left`, () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const run = play(s)
        for (const state of states(run)) {
          for (const [, phase] of state.rows) if (phase.status === "queued") expect(phase.attempt).toBeLessThan(MAX_ATTEMPTS)
        }
        const attempts = new Map<number, number>()
        for (const event of run.emitted) {
          const e = rowEvent(event)
          if (e === undefined) continue
          const previous = attempts.get(e.row) ?? 0
          if (e.type === "row_started") {
            expect(e.attempt).toBe(previous + 1)
            expect(e.attempt).toBeLessThanOrEqual(MAX_ATTEMPTS)
            attempts.set(e.row, e.attempt)
          } else expect(e.attempt).toBe(previous)
        }
      }),
      { numRuns },
    )
  })

  it("a row's result is recorded at most once: one of row_completed, row_failed, row_cancelled per row, and none for a row the batch settled when it closed", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const settled = new Set<number>()
        for (const { before, decision } of play(s).turns) {
          for (const event of emittedBy(decision)) {
            const e = rowEvent(event)
            if (e !== undefined) {
              expect(settled.has(e.row)).toBe(false)
              if (e.type === "row_completed" || e.type === "row_failed" || e.type === "row_cancelled") settled.add(e.row)
            } else if ("cancelled_rows" in event || "failed_rows" in event || "expired_rows" in event) {
              const idle = rowsOf(before).filter((row) => {
                const phase = rowPhase(before, row)
                return before.closedAs === undefined && (phase === undefined || phase.status === "queued")
              })
              const closedRows = "cancelled_rows" in event ? event.cancelled_rows : "failed_rows" in event ? event.failed_rows : event.expired_rows
              expect(closedRows).toBe(idle.length)
              for (const row of idle) settled.add(row)
            }
          }
        }
      }),
      { numRuns },
    )
  })

  it("a batch completes exactly when every row has settled and nothing runs, and then every row completed or failed", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const state of states(play(s))) {
          const done = state.closedAs === undefined && state.running === 0 && idleRows(state) === 0
          expect(state.status === "completed").toBe(done)
          if (done) expect(state.completed + state.failed).toBe(state.total)
        }
      }),
      { numRuns },
    )
  })

  it("a cancelling batch becomes cancelled exactly when its last running row settles", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const state of states(play(s))) {
          if (state.status === "cancelling") expect(state.running).toBeGreaterThan(0)
          if (state.status === "cancelled") expect(state.running).toBe(0)
        }
      }),
      { numRuns },
    )
  })

  it("a batch is deleted only while nothing runs, and after that every command is rejected as not found", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const { before, decision, after } of play(s).turns) {
          if (after.deleted) expect(after.running).toBe(0)
          if (before.deleted) expect(Either.isLeft(decision) && decision.left._tag).toBe("BatchNotFound")
        }
      }),
      { numRuns },
    )
  })

  it("a row ends cancelled only in a batch that was cancelled", () => {
    fc.assert(
      fc.property(scenario, (s) => {
        for (const state of states(play(s))) {
          if (state.cancelled > 0) expect(["cancelling", "cancelled"]).toContain(state.status)
        }
      }),
      { numRuns },
    )
  })
})
