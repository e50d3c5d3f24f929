import { Chunk, Effect, Fiber, Layer, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { EventLog, type EventLogShape, LogUnavailable } from "../../src/eventlog/EventLog.js"
import { LogHealth, watched } from "../../src/eventlog/LogHealth.js"

/** A log whose probes answer as `answers` says, in turn: "hang" never answers (a request lost to a reset connection). */
const scriptedLog = (answers: Array<"hang" | "ok">, readFailsAfterMs = 0) => {
  let asked = 0
  const log = {
    probe: Effect.suspend(() => {
      asked++
      return (answers.shift() ?? "ok") === "hang" ? Effect.never : Effect.void
    }),
    // A read whose first lookup was lost: it fails after `ms`, as a request's timeout would.
    read: () => Stream.fromEffect(Effect.sleep(readFailsAfterMs)).pipe(Stream.flatMap(() => Stream.fail(new LogUnavailable({ message: "last message lookup failed: timeout" })))),
  } as unknown as EventLogShape
  return { layer: Layer.succeed(EventLog, log), asked: () => asked }
}

describe("the log's health", () => {
  it("a probe lost before a partition healed, timing out after a newer probe was answered, leaves the log up", async () => {
    const { layer, asked } = scriptedLog(["hang", "ok"])
    const health = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const health = yield* LogHealth
          // The watcher's first probe is out and hangs; the readiness check asks afresh and is answered.
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 100)))
          expect(asked()).toBe(1)
          yield* health.check
          expect(health.unavailable()).toBeUndefined()
          // The lost probe times out (3 s) after the answer: its verdict is older and changes nothing.
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 3_300)))
          return { down: health.unavailable() }
        }),
      ).pipe(Effect.provide(watched(layer))),
    )
    expect(health.down).toBeUndefined()
  })

  it("a read begun before a newer probe was answered, failing after it, leaves the log up", async () => {
    const { layer } = scriptedLog(["ok", "ok"], 500)
    const down = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const health = yield* LogHealth
          const log = yield* EventLog
          const reading = yield* Effect.fork(Stream.runDrain(log.read("batch.>", 1)))
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 100)))
          yield* health.check
          yield* Effect.exit(reading.await)
          return health.unavailable()
        }),
      ).pipe(Effect.provide(watched(layer))),
    )
    expect(down).toBeUndefined()
  })

  it("a probe that times out with nothing newer answered marks the log down, and the next answer brings it back", async () => {
    const { layer } = scriptedLog(["hang", "ok"])
    const seen = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const health = yield* LogHealth
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 3_300)))
          const down = health.unavailable()
          // Down, the watcher probes every second: the second probe is answered.
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 1_300)))
          return { down, after: health.unavailable() }
        }),
      ).pipe(Effect.provide(watched(layer))),
    )
    expect(seen.down).toBe("the event log did not answer within 3s")
    expect(seen.after).toBeUndefined()
  })

  it("tells its changes as they come: up as it starts, down when the probe times out, up with the next answer", async () => {
    const { layer } = scriptedLog(["hang", "ok"])
    const told = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const health = yield* LogHealth
          const listening = yield* Effect.fork(Stream.runCollect(Stream.take(health.changes, 3)))
          return Chunk.toReadonlyArray(yield* Fiber.join(listening))
        }),
      ).pipe(Effect.provide(watched(layer))),
    )
    expect(told).toEqual([undefined, "the event log did not answer within 3s", undefined])
  })
})
