import { Effect, Option, Schema } from "effect"
import { batchSubject } from "../domain/batch/subjects.js"
import { IdempotencyEvent } from "../domain/idempotency/events.js"
import { idempotencySubject } from "../domain/idempotency/subjects.js"
import type { EventLogShape, LogUnavailable, WrongLastSequence } from "../eventlog/EventLog.js"

const decode = Schema.decodeUnknownOption(Schema.parseJson(IdempotencyEvent))
const text = new TextDecoder()
const encoder = new TextEncoder()

export interface KeyRecord {
  /** The key's last record, and its position on the key's subject (0: none). */
  readonly last: IdempotencyEvent | undefined
  readonly seq: number
  /** Whether the last claim's batch reached the log (it may have been deleted since). */
  readonly batchStored: boolean
}

/**
 * Idempotency keys, kept in the log: every instance reads a key's records from the log itself, never
 * from its read model, which may lag, and claims a key with an expected last subject sequence, so two
 * creates racing with one key (on one instance or two) cannot both claim it.
 */
export const makeIdempotencyKeys = (log: EventLogShape) => {
  const exists = (subject: string) => Effect.map(log.lastSeqOf(subject), (seq) => seq > 0)

  const look = (digest: string): Effect.Effect<KeyRecord, LogUnavailable> =>
    Effect.gen(function* () {
      const subject = idempotencySubject(digest)
      const seq = yield* log.lastSeqOf(subject)
      const message = seq === 0 ? undefined : yield* log.readMessage(subject, seq, seq)
      if (message === undefined) return { last: undefined, seq, batchStored: false }
      const last = Option.getOrUndefined(decode(text.decode(message.data)))
      if (last?.type !== "idempotency_key_claimed") return { last, seq, batchStored: false }
      const batchStored =
        (yield* exists(batchSubject(last.batch_id, "batch_created"))) || (yield* exists(batchSubject(last.batch_id, "batch_purged")))
      return { last, seq, batchStored }
    })

  /** Appends the key's next record, refused when another record was appended after `afterSeq`. */
  const record = (digest: string, afterSeq: number, event: IdempotencyEvent): Effect.Effect<number, WrongLastSequence | LogUnavailable> =>
    Effect.map(
      log.append([{ subject: idempotencySubject(digest), data: encoder.encode(JSON.stringify(event)), expectLastSubjectSeq: afterSeq }]),
      (results) => results[0]!.seq,
    )

  return { look, record, head: log.lastSeq }
}
export type IdempotencyKeys = ReturnType<typeof makeIdempotencyKeys>
