import { existsSync } from "node:fs"
import { join } from "node:path"
import { Data, Effect, Layer, Option } from "effect"
import { SluiceConfig } from "../config/Config.js"
import { EventLog, type LogUnavailable } from "../eventlog/EventLog.js"
import * as JetStreamEventLog from "../eventlog/JetStreamEventLog.js"
import * as SqliteEventLog from "../eventlog/SqliteEventLog.js"

export class NoEventLog extends Data.TaggedError("NoEventLog")<{ readonly message: string }> {}

/** The log the service uses (NATS_URL, else $SLUICE_DATA_DIR/log.sqlite), and the live read model beside it. */
export const auditTarget = Effect.map(SluiceConfig, (config) => {
  const backend = Option.isSome(config.natsUrl) ? "nats" : "embedded"
  return {
    config,
    livePath: join(config.dataDir, `read.${backend}.sqlite`),
    scratchPath: join(config.dataDir, `read.${backend}.audit-${process.pid}.sqlite`),
  }
})

// Opening the embedded log would create an empty one: a wrong SLUICE_DATA_DIR would then look like an empty history.
export const auditLog: Layer.Layer<EventLog, LogUnavailable | NoEventLog> = Layer.unwrapEffect(
  Effect.map(Effect.orDie(SluiceConfig), (config): Layer.Layer<EventLog, LogUnavailable | NoEventLog> => {
    const embedded = join(config.dataDir, "log.sqlite")
    return Option.match(config.natsUrl, {
      onSome: (url) => JetStreamEventLog.layer({ url }),
      onNone: () =>
        existsSync(embedded)
          ? SqliteEventLog.layer({ path: embedded })
          : Layer.fail(new NoEventLog({ message: `no event log at ${embedded}: is SLUICE_DATA_DIR (or NATS_URL) right?` })),
    })
  }),
)
