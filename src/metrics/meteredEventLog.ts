import { Effect, Layer } from "effect"
import { EventLog } from "../eventlog/EventLog.js"
import { Metrics } from "./Metrics.js"

/** The event log, each append timed and its stored messages and the events they hold counted. */
export const metered = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    const metrics = yield* Metrics
    return {
      ...log,
      append: (messages) =>
        Effect.suspend(() => {
          const started = performance.now()
          return Effect.tap(log.append(messages), (results) =>
            Effect.sync(() => {
              let stored = 0
              let events = 0
              results.forEach((r, i) => {
                if (r.duplicate) return
                stored++
                events += messages[i]!.events ?? 1
              })
              metrics.appended(stored, events, (performance.now() - started) / 1000)
            }),
          )
        }),
    } satisfies EventLog["Type"]
  }),
)
