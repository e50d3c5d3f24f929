import { createHash, randomUUID } from "node:crypto"
import { Effect, Exit, Option, Stream } from "effect"
import {
  type AppendInput,
  type AppendResult,
  type EventLogShape,
  type LogMessage,
  type LogUnavailable,
  type ReadOptions,
  WrongLastSequence,
} from "./EventLog.js"
import { HASH_HEADER, makeStamper, PREV_HASH_HEADER, type StampOptions } from "./eventHeaders.js"

export const CHUNK_HEADER = "Sluice-Chunk"
export const DEFAULT_MAX_PAYLOAD = 900 * 1024

export interface RawAppend extends AppendInput {}

export interface RawMessage extends LogMessage {}

/** One outcome per message: a failed expectation does not stop the other messages of the append. */
export type RawOutcome = AppendResult | WrongLastSequence

/** What an adapter implements: stored messages as they are, never larger than maxPayload. */
export interface RawEventLog {
  readonly maxPayload: number
  readonly append: (messages: ReadonlyArray<RawAppend>) => Effect.Effect<ReadonlyArray<RawOutcome>, LogUnavailable>
  readonly read: (filter: string, fromSeq: number, options?: ReadOptions) => Stream.Stream<RawMessage, LogUnavailable>
  readonly follow: (filter: string, fromSeq: number, options?: ReadOptions) => Stream.Stream<RawMessage, LogUnavailable>
  /** The stored messages on exactly `subject` with seqs from `fromSeq` to `toSeq`, in order. */
  readonly range: (subject: string, fromSeq: number, toSeq: number) => Effect.Effect<ReadonlyArray<RawMessage>, LogUnavailable>
  readonly lastSeq: Effect.Effect<number, LogUnavailable>
  readonly lastSeqOf: (subject: string) => Effect.Effect<number, LogUnavailable>
  readonly lastSeqMatching: (filter: string) => Effect.Effect<number, LogUnavailable>
  readonly probe: Effect.Effect<void, LogUnavailable>
  readonly purge: (filter: string) => Effect.Effect<number, LogUnavailable>
}

// A retry with the same msgId must produce the same chunk id, or parts stored by a crashed first
// attempt could never be reassembled with the parts stored by the retry.
const chunkIdFor = (msgId: string | undefined): string =>
  msgId === undefined
    ? randomUUID().replaceAll("-", "")
    : createHash("sha256").update(msgId).digest("base64url").slice(0, 32)

export const splitIntoParts = (message: AppendInput, maxPayload: number): ReadonlyArray<RawAppend> => {
  const { subject, data, msgId, expectLastSubjectSeq, headers } = message
  if (data.length <= maxPayload) return [message]
  const n = Math.ceil(data.length / maxPayload)
  const chunkId = chunkIdFor(msgId)
  // Every part carries the message's headers: a reader of one stored part finds its link there.
  return Array.from({ length: n }, (_, i) => ({
    subject,
    data: data.subarray(i * maxPayload, (i + 1) * maxPayload),
    headers: { ...headers, [CHUNK_HEADER]: `${chunkId} ${i} ${n}` },
    ...(msgId === undefined ? {} : { msgId: `${msgId}#${i}` }),
    ...(i === 0 && expectLastSubjectSeq !== undefined ? { expectLastSubjectSeq } : {}),
  }))
}

const appendChunked = (raw: RawEventLog) => (stamped: ReadonlyArray<AppendInput>) =>
  Effect.gen(function* () {
    const plans = stamped.map((m) => splitIntoParts(m, raw.maxPayload))
    const outcomes: Array<Array<RawOutcome | undefined>> = plans.map((parts) => parts.map(() => undefined))
    let batch: Array<readonly [plan: number, part: number]> = []
    const flush = Effect.gen(function* () {
      if (batch.length === 0) return
      const sent = batch
      batch = []
      const results = yield* raw.append(sent.map(([p, i]) => plans[p]![i]!))
      sent.forEach(([p, i], k) => (outcomes[p]![i] = results[k]))
    })
    for (const [p, parts] of plans.entries()) {
      const guarded = parts.length > 1 && parts[0]!.expectLastSubjectSeq !== undefined
      // The first part must be known to pass its expectation before the rest are stored.
      if (guarded) {
        batch.push([p, 0])
        yield* flush
        if (outcomes[p]![0] instanceof WrongLastSequence) continue
      }
      for (let i = guarded ? 1 : 0; i < parts.length; i++) batch.push([p, i])
    }
    yield* flush
    const results: Array<AppendResult> = []
    for (const parts of outcomes) {
      const failed = parts.find((o) => o instanceof WrongLastSequence)
      if (failed !== undefined) return yield* Effect.fail(failed)
      const done = parts as ReadonlyArray<AppendResult>
      const stored = { seq: done[done.length - 1]!.seq, duplicate: done.every((o) => o.duplicate) }
      results.push(done.length > 1 ? { ...stored, firstSeq: done[0]!.seq } : stored)
    }
    return results
  })

/** Appends stamped with the log's headers (eventHeaders.ts), then stored in parts where they must be. */
const appendStamped = (raw: RawEventLog, options: StampOptions) => {
  const stamper = makeStamper({
    lastSeqOf: raw.lastSeqOf,
    linkAt: (subject, seq) => Effect.map(raw.range(subject, seq, seq), (stored) => stored[0]?.headers?.[HASH_HEADER] ?? ""),
  }, options)
  const append = appendChunked(raw)
  return (messages: ReadonlyArray<AppendInput>) =>
    Effect.flatMap(stamper.stamp(messages), (stamped) =>
      Effect.onExit(append(stamped), (exit) =>
        Effect.sync(() => stamper.settled(stamped, Exit.isSuccess(exit) ? exit.value : undefined)),
      ),
    )
}

/** A message's own headers: everything but the chunk header, which only says how it was stored. */
const ownHeaders = (headers: Readonly<Record<string, string>> | undefined) => {
  if (headers === undefined) return undefined
  const { [CHUNK_HEADER]: _, ...own } = headers
  return Object.keys(own).length === 0 ? undefined : own
}
const withOwn = <M extends object>(message: M, headers: Readonly<Record<string, string>> | undefined) =>
  headers === undefined ? message : { ...message, headers }

interface Assembly {
  readonly headers: Readonly<Record<string, string>> | undefined
  readonly firstSeq: number
  readonly subject: string
  readonly n: number
  readonly parts: Array<Uint8Array>
}

const MAX_OPEN_ASSEMBLIES = 1024

const concat = (parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0))
  let offset = 0
  for (const p of parts) {
    out.set(p, offset)
    offset += p.length
  }
  return out
}

const withLinks = <M extends object>(message: M, headers: Readonly<Record<string, string>> | undefined) => {
  const link = headers?.[HASH_HEADER]
  if (link === undefined) return message
  const prevLink = headers?.[PREV_HASH_HEADER]
  return prevLink === undefined ? { ...message, link } : { ...message, link, prevLink }
}

/** Stateful per stream run: joins parts by chunk id, drops parts whose predecessors were never seen. */
const makeReassembler = (keepHeaders = true) => {
  const open = new Map<string, Assembly>()
  // Without headers, a message keeps its chain links where the adapter gave them.
  const withHeaders = <M extends object>(message: M, headers: Readonly<Record<string, string>> | undefined) =>
    keepHeaders ? withOwn(message, headers) : withLinks(message, headers)
  // Assemblies open in seq order (a Map keeps insertion order), so the first is the oldest.
  const withResume = (message: LogMessage): LogMessage => {
    const oldest = open.values().next()
    return oldest.done === true ? message : { ...message, resumeSeq: oldest.value.firstSeq }
  }
  return (m: RawMessage): Option.Option<LogMessage> => {
    const header = m.headers?.[CHUNK_HEADER]
    if (header === undefined && open.size === 0) {
      return Option.some(withHeaders({ seq: m.seq, subject: m.subject, time: m.time, data: m.data }, m.headers))
    }
    const plain = { seq: m.seq, subject: m.subject, time: m.time }
    if (header === undefined) return Option.some(withResume(withHeaders({ ...plain, data: m.data }, m.headers)))
    const [id = "", iText = "", nText = ""] = header.split(" ")
    const i = Number(iText)
    const n = Number(nText)
    if (i === 0) {
      open.delete(id)
      // A writer that died mid-message leaves an assembly that never completes; bound the leak.
      if (open.size >= MAX_OPEN_ASSEMBLIES) open.delete(open.keys().next().value!)
      open.set(id, { headers: ownHeaders(m.headers), firstSeq: m.seq, subject: m.subject, n, parts: [m.data] })
    } else {
      const assembly = open.get(id)
      if (assembly === undefined || assembly.n !== n || assembly.parts.length !== i || assembly.subject !== m.subject) {
        open.delete(id)
        return Option.none()
      }
      assembly.parts.push(m.data)
    }
    const assembly = open.get(id)!
    if (assembly.parts.length < n) return Option.none()
    open.delete(id)
    return Option.some(withResume(withHeaders({ ...plain, data: concat(assembly.parts), firstSeq: assembly.firstSeq }, assembly.headers)))
  }
}

/** Messages whole; without their headers for a reader that asked so (`withoutHeaders`), once joined. */
const reassemble = <E>(stream: Stream.Stream<RawMessage, E>, options: ReadOptions | undefined): Stream.Stream<LogMessage, E> =>
  Stream.suspend(() => Stream.filterMap(stream, makeReassembler(options?.withoutHeaders !== true)))

/** The port over a raw adapter: splits large appends into parts and joins them again on read. */
export const withChunking = (raw: RawEventLog, options: StampOptions = {}): EventLogShape => ({
  maxPayload: raw.maxPayload,
  append: appendStamped(raw, options),
  read: (filter, fromSeq, options) => reassemble(raw.read(filter, fromSeq, options), options),
  follow: (filter, fromSeq, options) => reassemble(raw.follow(filter, fromSeq, options), options),
  readMessage: (subject, firstSeq, seq) =>
    Effect.map(raw.range(subject, firstSeq, seq), (stored) => {
      const join = makeReassembler()
      for (const part of stored) {
        const message = join(part)
        if (Option.isSome(message) && message.value.seq === seq) {
          const { resumeSeq: _, ...whole } = message.value
          return whole
        }
      }
      return undefined
    }),
  lastSeq: raw.lastSeq,
  linkAt: (subject, seq) => Effect.map(raw.range(subject, seq, seq), (stored) => (stored.length === 0 ? undefined : (stored[0]!.headers?.[HASH_HEADER] ?? ""))),
  lastSeqOf: raw.lastSeqOf,
  lastSeqMatching: raw.lastSeqMatching,
  probe: raw.probe,
  purge: raw.purge,
})
