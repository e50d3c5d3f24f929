import { existsSync } from "node:fs"
import { Effect, Stream } from "effect"
import type { EventLogShape } from "../eventlog/EventLog.js"
import { appliedOffset } from "../projections/Projector.js"
import { openReadOnly } from "../projections/readModelFile.js"
import { rebuildReadModel, removeReadModelFiles } from "../projections/rebuild.js"
import { type ChainProblem, makeChainCheck } from "./chainCheck.js"
import { type ReadModelDifference, readModelDifferences } from "./readModelDiff.js"

export interface Verification {
  readonly messages: number
  readonly chains: { readonly checked: number; readonly unchained: number; readonly subjects: number }
  readonly chainProblems: ReadonlyArray<ChainProblem>
  /** Undefined when the live read model could not be compared (missing, or not at the log's position). */
  readonly differences: ReadonlyArray<ReadModelDifference> | undefined
  readonly notCompared: string | undefined
  readonly comparedAt: string | undefined
  /** Messages the rebuild read (a second pass, without request bodies). */
  readonly rebuiltEvents: number
  readonly ms: number
}

/**
 * `sluice audit verify`: every subject's hash chain over the whole log, then every projection rebuilt
 * from it into a scratch read model and compared with the live one, batch by batch (responses, streams and files too).
 */
const withReadOnly = <A>(path: string, use: (db: ReturnType<typeof openReadOnly>) => A): A => {
  const db = openReadOnly(path)
  try {
    return use(db)
  } finally {
    db.close()
  }
}

export const verifyLog = (log: EventLogShape, livePath: string, scratchPath: string) =>
  Effect.gen(function* () {
    const started = performance.now()
    const check = makeChainCheck()
    let messages = 0
    const lastSeq = yield* log.lastSeq
    yield* log.read(">", 1).pipe(
      Stream.takeWhile((m) => m.seq <= lastSeq),
      Stream.runForEach((m) => Effect.sync(() => {
        messages++
        check.add(m)
      })),
    )
    // The live read model is compared at its own position, in one read transaction: a running service
    // goes on applying events meanwhile, and a stopped one has not seen what came after.
    const live = existsSync(livePath) ? yield* Effect.acquireRelease(
      Effect.sync(() => {
        const db = openReadOnly(livePath)
        db.exec("BEGIN")
        return db
      }),
      (db) => Effect.sync(() => {
        db.exec("COMMIT")
        db.close()
      }),
    ) : undefined
    const liveOffset = live === undefined ? undefined : appliedOffset(live)
    const rebuilt = yield* rebuildReadModel(log, scratchPath, liveOffset === undefined ? {} : { upto: liveOffset })
    let differences: ReadonlyArray<ReadModelDifference> | undefined
    let notCompared: string | undefined
    let comparedAt: string | undefined
    if (live === undefined || liveOffset === undefined) notCompared = `no live read model at ${livePath}`
    else if (liveOffset > lastSeq) notCompared = `the live read model is ahead of the log (applied ${liveOffset}, the log ends at ${lastSeq})`
    else {
      differences = withReadOnly(scratchPath, (scratch) => readModelDifferences(live, scratch))
      comparedAt = liveOffset < lastSeq ? `at seq ${liveOffset}, where the live read model is (the log goes on to ${lastSeq})` : `at seq ${lastSeq}`
    }
    return {
      messages,
      chains: check.counts(),
      chainProblems: check.problems(),
      differences,
      notCompared,
      comparedAt,
      rebuiltEvents: rebuilt.events,
      ms: performance.now() - started,
    } satisfies Verification
  }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => removeReadModelFiles(scratchPath))))

/** The report's lines, grouped by batch, response, stream or file, and whether everything checked out. */
export const verificationReport = (v: Verification): { readonly lines: ReadonlyArray<string>; readonly ok: boolean } => {
  const lines: Array<string> = []
  const perSecond = v.ms > 0 ? Math.round((v.messages * 1000) / v.ms) : v.messages
  lines.push(`messages  ${v.messages} checked, and ${v.rebuiltEvents} replayed, in ${v.ms.toFixed(0)} ms (${perSecond} events/s)`)
  lines.push(`chains    ${v.chains.subjects} subjects, ${v.chains.checked} links checked, ${v.chains.unchained} messages from before chains`)
  const byAggregate = new Map<string, Array<string>>()
  const add = (aggregate: string, line: string) => byAggregate.set(aggregate, [...(byAggregate.get(aggregate) ?? []), line])
  for (const p of v.chainProblems) add(p.aggregate, `  seq ${p.seq} on ${p.subject} ${p.what}`)
  for (const d of v.differences ?? []) add(d.aggregate ?? "(accounts)", `  read model: ${d.what}`)
  for (const [aggregate, found] of byAggregate) lines.push(aggregate, ...found)
  if (v.notCompared !== undefined) lines.push(`read model not compared: ${v.notCompared}`)
  else lines.push(`read model compared ${v.comparedAt ?? ""}`)
  const ok = v.chainProblems.length === 0 && v.differences !== undefined && v.differences.length === 0
  lines.push(
    ok
      ? "result    verified: every chain holds and the rebuilt read model equals the live one"
      : `result    ${v.chainProblems.length} chain problem(s), ${v.differences === undefined ? "read model not compared" : `${v.differences.length} read model difference(s)`}`,
  )
  return { lines, ok }
}
