import busboy from "busboy"
import { Data, Deferred, Effect, Exit, Queue, Sink, Stream } from "effect"
import type { IncomingMessage } from "node:http"
import type { Readable } from "node:stream"
import { filePartSubject, partMsgId } from "../domain/file/events.js"
import { type ContentCount, countChunk, MAX_BATCH_FILE_LINES, MAX_FILE_BYTES, noContent, type UploadForm } from "../domain/file/upload.js"
import type { AppendInput, EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import { appendSettled } from "../actors/unknownOutcome.js"

/** Bytes a part: well under the log's largest message, so no part is itself split. */
export const PART_BYTES = 256 * 1024
/** Parts appended together, pipelined; the request is not read meanwhile. */
const GROUP_PARTS = 16
const PART_HEADERS = { "ce-type": "sluice.file.part", "ce-datacontenttype": "application/octet-stream" } as const

/** The body is no multipart form, or not a well-formed one. */
export class Malformed extends Data.TaggedError("Malformed")<{ readonly message: string }> {}
/** The client went away before the body ended. */
export class Disconnected extends Data.TaggedError("Disconnected")<{}> {}

/** Where the stored content is: its parts on `file.<id>.part` (none for an empty file). */
export interface StoredContent {
  readonly first_seq: number
  readonly last_seq: number
  readonly parts: number
}

export interface Received {
  readonly form: UploadForm
  readonly stored: StoredContent
  /** Parts were appended: whoever refuses the upload purges them. */
  readonly appended: boolean
}

type Arrival =
  | { readonly _tag: "field"; readonly name: string; readonly value: string }
  | { readonly _tag: "file"; readonly name: string; readonly stream: Readable; readonly filename: string | undefined }
  | { readonly _tag: "end" }

/**
 * The parts of the file, as they arrive: cut into PART_BYTES messages, appended GROUP_PARTS at a time,
 * each group stored before the next chunk is read (the request waits meanwhile, so memory holds one group
 * at most). Once the file has more lines than a batch file may have, nothing more is stored: the upload
 * is refused at its end, when its purpose is known.
 */
const makePartWriter = (log: EventLogShape, fileId: string, onAppended: () => void) => {
  const subject = filePartSubject(fileId)
  let staging = Buffer.allocUnsafe(PART_BYTES)
  let used = 0
  let group: Array<AppendInput> = []
  let parts = 0
  let firstSeq = 0
  let lastSeq = 0
  let count: ContentCount = noContent
  let storing = true

  const cut = () => {
    if (used === 0) return
    group.push({ subject, data: staging.subarray(0, used), msgId: partMsgId(fileId, parts + group.length), headers: PART_HEADERS, events: 0 })
    staging = Buffer.allocUnsafe(PART_BYTES)
    used = 0
  }
  // Uninterruptible: a client gone mid-append must not leave a part stored after the purge that follows.
  const flush = Effect.suspend(() => {
    const sent = group
    group = []
    if (sent.length === 0) return Effect.void
    onAppended()
    return appendSettled(log, sent).pipe(
      // Parts carry no expected sequence.
      Effect.catchTag("WrongLastSequence", (e) => Effect.die(e)),
      Effect.tap((stored) =>
        Effect.sync(() => {
          if (parts === 0) firstSeq = stored[0]!.firstSeq ?? stored[0]!.seq
          lastSeq = stored[stored.length - 1]!.seq
          parts += sent.length
        }),
      ),
      Effect.asVoid,
      Effect.uninterruptible,
    )
  })

  /** One chunk of the file: false once the file is larger than any may be (reading stops there). */
  const take = (chunk: Uint8Array): Effect.Effect<boolean, LogUnavailable> =>
    Effect.suspend(() => {
      count = countChunk(count, chunk)
      if (count.bytes > MAX_FILE_BYTES) return Effect.succeed(false)
      if (count.newlines > MAX_BATCH_FILE_LINES) storing = false
      if (!storing) return Effect.succeed(true)
      for (let at = 0; at < chunk.length; ) {
        const n = Math.min(chunk.length - at, PART_BYTES - used)
        staging.set(chunk.subarray(at, at + n), used)
        used += n
        at += n
        if (used === PART_BYTES) cut()
      }
      return group.length >= GROUP_PARTS ? Effect.as(flush, true) : Effect.succeed(true)
    })

  const end = Effect.suspend(() => {
    if (storing) cut()
    return flush
  })

  return {
    take,
    end,
    count: () => count,
    stored: (): StoredContent => ({ first_seq: firstSeq, last_seq: lastSeq, parts }),
  }
}

/**
 * Reads a multipart/form-data upload from the raw request as it streams in, its `file` part going to the
 * log in parts. Fields may come before or after the file; what they say is judged once the form has been
 * read (domain/file/upload.ts). A body larger than a file may be stops being read at once.
 */
export const receiveUpload = (log: EventLogShape, fileId: string, incoming: IncomingMessage) =>
  Effect.gen(function* () {
    const arrivals = yield* Queue.unbounded<Arrival>()
    const broken = yield* Deferred.make<never, Malformed | Disconnected>()
    const parser = yield* Effect.acquireRelease(
      Effect.try({
        try: () =>
          busboy({
            headers: incoming.headers,
            limits: { fieldSize: 64 * 1024, fields: 32, parts: 64, fieldNameSize: 200 },
          }),
        catch: (e) => new Malformed({ message: `The request must be multipart/form-data with a 'file' and a 'purpose' (${e instanceof Error ? e.message : String(e)})` }),
      }),
      (parser) =>
        Effect.sync(() => {
          incoming.unpipe(parser)
          parser.removeAllListeners()
          // Whatever is left of a body read no further is dropped with the connection (the answer says close).
          parser.on("error", () => undefined)
          parser.destroy()
        }),
    )
    const fail = (error: Malformed | Disconnected) => Deferred.unsafeDone(broken, Exit.fail(error))
    parser.on("field", (name, value) => Queue.unsafeOffer(arrivals, { _tag: "field", name, value }))
    parser.on("file", (name, stream, info) => Queue.unsafeOffer(arrivals, { _tag: "file", name, stream, filename: info.filename }))
    parser.on("close", () => Queue.unsafeOffer(arrivals, { _tag: "end" }))
    parser.on("error", (e) => fail(new Malformed({ message: `The multipart body could not be read: ${e instanceof Error ? e.message : String(e)}` })))
    const gone = () => {
      if (!incoming.complete) fail(new Disconnected())
    }
    incoming.on("aborted", gone)
    incoming.on("close", gone)
    incoming.on("error", gone)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        incoming.off("aborted", gone)
        incoming.off("close", gone)
        incoming.off("error", gone)
      }),
    )
    incoming.pipe(parser)

    let appended = false
    const writer = makePartWriter(log, fileId, () => void (appended = true))
    const fields = new Map<string, Array<string>>()
    const fileParts: Array<string> = []
    let filename: string | undefined
    let tooLarge = false

    const chunks = (stream: Readable) =>
      Stream.fromAsyncIterable(stream as AsyncIterable<Uint8Array>, () => new Malformed({ message: "The multipart body could not be read" }))

    const readForm = Effect.gen(function* () {
      for (;;) {
        const arrival = yield* Queue.take(arrivals)
        if (arrival._tag === "end") return
        if (arrival._tag === "field") {
          fields.set(arrival.name, [...(fields.get(arrival.name) ?? []), arrival.value])
          continue
        }
        fileParts.push(arrival.name)
        if (arrival.name !== "file" || filename !== undefined || fileParts.filter((n) => n === "file").length > 1) {
          yield* Stream.runDrain(chunks(arrival.stream))
          continue
        }
        filename = arrival.filename ?? ""
        // Not Stream.runForEachWhile: its sink nests a catchAll per element, which holds each element until the
        // stream ends (effect 3.22), so a 200 MB upload stayed in memory whole. A chunk at a time lets each go.
        yield* Stream.run(
          chunks(arrival.stream),
          Sink.forEachChunkWhile((pieces) => Effect.reduce(pieces, true, (going, piece) => (going ? writer.take(piece) : Effect.succeed(false)))),
        )
        if (writer.count().bytes > MAX_FILE_BYTES) {
          tooLarge = true
          return
        }
        yield* writer.end
      }
    })
    yield* Effect.raceFirst(readForm, Deferred.await(broken))
    // The parser reports a form cut short and then closes, at once: its end may have been taken first.
    if (yield* Deferred.isDone(broken)) yield* Deferred.await(broken)
    const form: UploadForm = { fields, fileParts, filename, content: writer.count(), tooLarge }
    return { form, stored: writer.stored(), appended } satisfies Received
  }).pipe(Effect.scoped)
