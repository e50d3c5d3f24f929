import { Chunk, Effect, Queue } from "effect"

export interface Gathering {
  /** The most messages one pause waits for: a chunk this large is applied at once. */
  readonly messages: number
  /** The longest a chunk waits for others, in wall-clock ms. */
  readonly ms: number
}

/**
 * Hands `apply` the stream's chunks gathered into fewer, larger ones: after a chunk arrives it waits
 * up to `ms` for more, unless it is large already or `wanted()` says a reader is waiting for what
 * it holds, and a reader beginning to wait cuts the pause short (`wake`).
 *
 * A transaction's cost is mostly its commit, which writes every page it touched, and with many batches
 * running each small transaction touches a page per batch: fewer commits of more rows cost less. The
 * pause is wall-clock time on a timer of the runtime's own, not the Clock: it is how the work is
 * grouped, not when anything is due, and a TestClock must not hold the read model back.
 */
export const makeChunkGathering = <A>(gathering: Gathering, wanted: () => boolean) =>
  Effect.gen(function* () {
    // Bounded, so a stream read faster than it is applied waits for it, as it did before the gathering.
    const arrived = yield* Queue.bounded<Chunk.Chunk<A>>(2)
    let cutShort: (() => void) | undefined
    const pause = Effect.async<void>((resume) => {
      const end = () => {
        cutShort = undefined
        clearTimeout(timer)
        resume(Effect.void)
      }
      const timer = setTimeout(end, gathering.ms)
      cutShort = end
      return Effect.sync(() => {
        cutShort = undefined
        clearTimeout(timer)
      })
    })

    const next: Effect.Effect<Chunk.Chunk<A>> = Effect.gen(function* () {
      const first = yield* Queue.take(arrived)
      if (first.length < gathering.messages && !wanted()) yield* pause
      const rest = yield* Queue.takeAll(arrived)
      return Chunk.isEmpty(rest) ? first : Chunk.flatten(Chunk.prepend(rest, first))
    })

    return {
      /** Where the stream's chunks go. */
      offer: (chunk: Chunk.Chunk<A>) => Queue.offer(arrived, chunk),
      /** A reader has begun to wait: whatever has arrived is applied now. */
      wake: () => cutShort?.(),
      /** The next gathered chunk, in the order the chunks arrived. */
      next,
    }
  })
