import { Chunk, Effect, Fiber } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeChunkGathering } from "../../src/projections/chunkGathering.js"

const HOUR = 3_600_000

describe("chunkGathering", () => {
  it("hands on every element once, in the order offered, however the chunks arrive", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.integer(), { minLength: 1, maxLength: 8 }), { maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        async (chunks, messages, wanted) => {
          const out = await Effect.runPromise(
            Effect.gen(function* () {
              const gathering = yield* makeChunkGathering<number>({ messages, ms: 1 }, () => wanted)
              const total = chunks.reduce((n, c) => n + c.length, 0)
              const consumer = yield* Effect.fork(
                Effect.gen(function* () {
                  const seen: Array<number> = []
                  while (seen.length < total) seen.push(...Chunk.toReadonlyArray(yield* gathering.next))
                  return seen
                }),
              )
              for (const c of chunks) yield* gathering.offer(Chunk.unsafeFromArray(c))
              return yield* Fiber.join(consumer)
            }),
          )
          expect(out).toEqual(chunks.flat())
        },
      ),
      { numRuns: 200 },
    )
  })

  // The pauses below are an hour: a chunk handed on within the test's time was not held by one.
  it("does not hold a chunk that is large already", async () => {
    const next = await Effect.runPromise(
      Effect.gen(function* () {
        const gathering = yield* makeChunkGathering<number>({ messages: 3, ms: HOUR }, () => false)
        yield* gathering.offer(Chunk.make(1, 2, 3))
        return yield* gathering.next
      }),
    )
    expect(Chunk.toReadonlyArray(next)).toEqual([1, 2, 3])
  })

  it("does not hold a chunk while a reader waits for what it holds", async () => {
    const next = await Effect.runPromise(
      Effect.gen(function* () {
        const gathering = yield* makeChunkGathering<number>({ messages: 100, ms: HOUR }, () => true)
        yield* gathering.offer(Chunk.make(1))
        return yield* gathering.next
      }),
    )
    expect(Chunk.toReadonlyArray(next)).toEqual([1])
  })

  it("ends a pause when a reader begins to wait, with every chunk that arrived meanwhile", async () => {
    const next = await Effect.runPromise(
      Effect.gen(function* () {
        const gathering = yield* makeChunkGathering<number>({ messages: 100, ms: HOUR }, () => false)
        yield* gathering.offer(Chunk.make(1))
        const taking = yield* Effect.fork(gathering.next)
        // The pause has begun once the taker is suspended in it.
        yield* Effect.yieldNow().pipe(Effect.repeatN(10))
        yield* gathering.offer(Chunk.make(2, 3))
        gathering.wake()
        return yield* Fiber.join(taking)
      }),
    )
    expect(Chunk.toReadonlyArray(next)).toEqual([1, 2, 3])
  })
})
