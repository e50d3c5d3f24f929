import { Layer } from "effect"
import { join } from "node:path"
import * as BatchWriter from "../../src/actors/BatchWriter.js"
import * as FateStore from "../../src/actors/fate/FateStore.js"
import type { EventLog } from "../../src/eventlog/EventLog.js"
import { InstanceId, Metrics } from "../../src/metrics/Metrics.js"
import * as Projector from "../../src/projections/Projector.js"
import { ReadModel } from "../../src/projections/ReadModel.js"

/** The batch writer over `log`, with a real read model in `dir` and its projector, as the service builds them. */
export const writerStack = <E>(dir: string, log: Layer.Layer<EventLog, E>, instance = "test") =>
  Layer.build(
    BatchWriter.Live.pipe(
      Layer.provide(FateStore.single),
      Layer.provideMerge(Projector.Live),
      Layer.provideMerge(ReadModel.layer(join(dir, "read.sqlite"))),
      Layer.provideMerge(log),
      Layer.provideMerge(Metrics.live),
      Layer.provide(InstanceId.layer(instance)),
    ),
  )
