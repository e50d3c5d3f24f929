import { createHash, randomUUID } from "node:crypto"
import { Effect } from "effect"
import type { AppendInput, AppendResult, LogUnavailable } from "./EventLog.js"

/*
 * The headers the log puts on every message it stores: the CloudEvents attributes (the CloudEvents
 * NATS binding, so generic event tooling can consume the subjects) and, on batch, response and stream
 * subjects, the message's link in its subject's hash chain. Payloads are never touched.
 *
 * The chain is per subject because a subject has one writer at a time: a model's lane only its lease
 * owner, a lifecycle subject one message ever, the input chunks the create, a stream's renames each
 * guarded by the subject's last sequence. A chain across a batch's subjects would need one writer for
 * the whole batch, which several instances do not have.
 */

export const PREV_HASH_HEADER = "Sluice-Prev-Sha256"
export const HASH_HEADER = "Sluice-Sha256"
export const CE_SPEC_VERSION = "1.0"
export const CE_SOURCE = "/sluice"

/** Batches', responses' (src/domain/batch/subjects.ts's roots), streams' and files' subjects carry links. */
export const isChained = (subject: string) =>
  subject.startsWith("batch.") || subject.startsWith("response.") || subject.startsWith("stream.") || subject.startsWith("file.")

/** A message's link: the SHA-256 of the previous link on its subject ("" for the first), its subject and its data. */
export const linkHash = (prev: string, subject: string, data: Uint8Array): string =>
  createHash("sha256").update(`${prev}\n${subject}\n`).update(data).digest("hex")

const text = new TextDecoder()
const TYPE_AT_START = /^\{"type":"([a-z_]+)"/

/** Every Sluice event is written with `type` first; anything else is typed by its subject's last token. */
const eventType = (subject: string, data: Uint8Array) =>
  TYPE_AT_START.exec(text.decode(data.subarray(0, 64)))?.[1] ?? subject.slice(subject.lastIndexOf(".") + 1)

export const cloudEventHeaders = (message: AppendInput, now: Date): Record<string, string> => {
  const [aggregate = "", id = ""] = message.subject.split(".", 2)
  return {
    "ce-specversion": CE_SPEC_VERSION,
    "ce-id": message.msgId ?? randomUUID(),
    // A message that is no event (a file's raw part) says its own type and content type.
    "ce-type": message.headers?.["ce-type"] ?? `sluice.${aggregate}.${eventType(message.subject, message.data)}`,
    "ce-source": CE_SOURCE,
    "ce-subject": id,
    "ce-time": now.toISOString(),
    "ce-datacontenttype": message.headers?.["ce-datacontenttype"] ?? "application/json",
  }
}

/** Where the log finds a subject's last link when this process has not written it since start. */
export interface ChainLookup {
  readonly lastSeqOf: (subject: string) => Effect.Effect<number, LogUnavailable>
  /** The link stored with the message at `seq` on `subject` ("" when it has none, as in logs written before chains). */
  readonly linkAt: (subject: string, seq: number) => Effect.Effect<string, LogUnavailable>
}

export interface StampOptions {
  /**
   * BENCH-ONLY: `false` writes no chain links, so a benchmark can measure what the chain costs. A log
   * written so cannot be verified; nothing but the benchmark's own Sluice processes turns it off.
   */
  readonly chain?: boolean
}

interface Head {
  readonly hash: string
  /** Unknown until the append that stores it answers. */
  seq: number | undefined
}

/**
 * Stamps appends with their headers. The last link of each subject this process wrote is kept, so
 * a writer appending to its own subjects costs one hash per message and no lookup; appends to one
 * subject come one after another (a batch's writer drains its outbox in order, a lane has one owner).
 */
export const makeStamper = (lookup: ChainLookup, options: StampOptions = {}) => {
  const heads = new Map<string, Head>()
  const linked = (subject: string) => options.chain !== false && isChained(subject)

  const previous = (m: AppendInput, inCall: Map<string, string>) =>
    Effect.suspend(() => {
      const chained = inCall.get(m.subject)
      if (chained !== undefined) return Effect.succeed(chained)
      if (m.expectLastSubjectSeq === 0) return Effect.succeed("")
      const head = heads.get(m.subject)
      if (head !== undefined && (m.expectLastSubjectSeq === undefined || head.seq === m.expectLastSubjectSeq)) {
        return Effect.succeed(head.hash)
      }
      return Effect.flatMap(
        m.expectLastSubjectSeq === undefined ? lookup.lastSeqOf(m.subject) : Effect.succeed(m.expectLastSubjectSeq),
        (seq) => (seq === 0 ? Effect.succeed("") : lookup.linkAt(m.subject, seq)),
      )
    })

  const stamp = (messages: ReadonlyArray<AppendInput>) =>
    Effect.gen(function* () {
      const now = new Date()
      const inCall = new Map<string, string>()
      const out: Array<AppendInput> = []
      for (const m of messages) {
        const ce = cloudEventHeaders(m, now)
        if (!linked(m.subject)) {
          out.push({ ...m, headers: { ...m.headers, ...ce } })
          continue
        }
        const prev = yield* previous(m, inCall)
        const hash = linkHash(prev, m.subject, m.data)
        inCall.set(m.subject, hash)
        heads.set(m.subject, { hash, seq: undefined })
        out.push({ ...m, headers: { ...m.headers, ...ce, ...(prev === "" ? {} : { [PREV_HASH_HEADER]: prev }), [HASH_HEADER]: hash } })
      }
      return out
    })

  /** After the append: a stored link is the subject's head at its seq; a duplicate or a failure leaves the head unknown. */
  const settled = (messages: ReadonlyArray<AppendInput>, results: ReadonlyArray<AppendResult> | undefined) => {
    messages.forEach((m, i) => {
      const head = heads.get(m.subject)
      // Not chained, or a later message of the same append is the head now.
      if (head === undefined || head.hash !== m.headers?.[HASH_HEADER]) return
      const result = results?.[i]
      if (result === undefined || result.duplicate) heads.delete(m.subject)
      else head.seq = result.seq
    })
  }

  return { stamp, settled }
}
