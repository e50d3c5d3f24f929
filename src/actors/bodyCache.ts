import { Deferred, Effect, Exit, FiberId } from "effect"
import { batchSubject } from "../domain/batch/subjects.js"
import { type EventLogShape, LogUnavailable } from "../eventlog/EventLog.js"
import type { ResultReads } from "../projections/resultReads.js"

const MAX_CACHED_BYTES = 8 * 1024 * 1024

interface Chunk {
  readonly key: string
  readonly batchId: string
  readonly first: number
  /** Serialized when the event is read: text takes a fraction of the memory of the parsed objects. */
  readonly bodies: ReadonlyArray<string>
  readonly bytes: number
}

const text = new TextDecoder()

/** A `row_bodies` event, or a `rows_added` one from before bodies had their own events. */
interface StoredBodies {
  readonly bodies?: ReadonlyArray<unknown>
  readonly rows?: ReadonlyArray<{ readonly body?: unknown }>
}
const interrupted = new LogUnavailable({ message: "the read of the request bodies was interrupted" })

/**
 * Request bodies for one model's rows, read from the batch's `row_bodies` events in the log: the
 * bodies are stored once, there. A batch's rows are mostly taken in order, so one event read serves
 * the hundreds of rows it holds. The events read are kept, most recently used last, up to a bound
 * in stored bytes, and forgotten when their batch is dropped.
 */
export const makeBodyCache = (results: ResultReads, log: EventLogShape) => {
  const chunks = new Map<string, Chunk>()
  // The chunk each batch last took a row from: where its next row nearly always is.
  const current = new Map<string, Chunk>()
  // Reads under way: the many workers that miss on one event at once wait for one read of it.
  const loading = new Map<string, Deferred.Deferred<Chunk | undefined, LogUnavailable>>()
  let cachedBytes = 0

  const bodyIn = (chunk: Chunk | undefined, row: number): string | undefined => {
    if (chunk === undefined || row < chunk.first || row >= chunk.first + chunk.bodies.length) return undefined
    return chunk.bodies[row - chunk.first]
  }
  const use = (chunk: Chunk) => {
    chunks.delete(chunk.key)
    chunks.set(chunk.key, chunk)
    current.set(chunk.batchId, chunk)
  }
  const keep = (chunk: Chunk) => {
    use(chunk)
    cachedBytes += chunk.bytes
    for (const oldest of chunks.values()) {
      if (cachedBytes <= MAX_CACHED_BYTES || oldest === chunk) break
      forget(oldest)
    }
  }
  const forget = (chunk: Chunk) => {
    chunks.delete(chunk.key)
    cachedBytes -= chunk.bytes
    if (current.get(chunk.batchId) === chunk) current.delete(chunk.batchId)
  }

  /** The row's body when the event holding it is the one its batch last took a row from: no read, no effect. */
  const cached = (batchId: string, row: number): string | undefined => bodyIn(current.get(batchId), row)

  /** The row's request body as JSON text; undefined when the log no longer has it (the batch was deleted). */
  const take = (batchId: string, row: number): Effect.Effect<string | undefined, LogUnavailable> => {
    const hit = cached(batchId, row)
    if (hit !== undefined) return Effect.succeed(hit)
    return Effect.suspend(() => {
      const where = results.rowChunk(batchId, row)
      if (where === undefined) return Effect.succeed(undefined)
      const key = `${batchId}:${where.first}`
      const known = chunks.get(key)
      if (known !== undefined) {
        use(known)
        return Effect.succeed(bodyIn(known, row))
      }
      const pending = loading.get(key)
      if (pending !== undefined) return Effect.map(Deferred.await(pending), (chunk) => bodyIn(chunk, row))
      const loaded = Deferred.unsafeMake<Chunk | undefined, LogUnavailable>(FiberId.none)
      loading.set(key, loaded)
      return log.readMessage(batchSubject(batchId, where.type), where.firstSeq, where.seq).pipe(
        Effect.map((message): Chunk | undefined => {
          if (message === undefined) return undefined
          const event = JSON.parse(text.decode(message.data)) as StoredBodies
          const parsed = (where.type === "row_bodies" ? event.bodies : event.rows?.map((r) => r.body)) ?? []
          const bodies = parsed.map((body) => JSON.stringify(body))
          const chunk: Chunk = { key, batchId, first: where.first, bodies, bytes: message.data.length }
          keep(chunk)
          return chunk
        }),
        Effect.onExit((exit) =>
          Effect.sync(() => {
            loading.delete(key)
            Deferred.unsafeDone(loaded, Exit.isInterrupted(exit) ? Exit.fail(interrupted) : exit)
          }),
        ),
        Effect.map((chunk) => bodyIn(chunk, row)),
      )
    })
  }
  const drop = (batchId: string) => {
    for (const chunk of [...chunks.values()]) if (chunk.batchId === batchId) forget(chunk)
    current.delete(batchId)
  }
  return { cached, take, drop }
}
