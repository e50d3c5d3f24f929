import { Config, ConfigError, Either, LogLevel } from "effect"
import { availableParallelism, hostname } from "node:os"

/** The operator contract: these names are documented in the README and relied on by deployments. */
export const SluiceConfig = Config.all({
  port: Config.integer("SLUICE_PORT").pipe(Config.withDefault(8080)),
  host: Config.string("SLUICE_HOST").pipe(Config.withDefault("127.0.0.1")),
  dataDir: Config.string("SLUICE_DATA_DIR").pipe(Config.withDefault("./data")),
  natsUrl: Config.option(Config.string("NATS_URL")),
  natsReplicas: Config.integer("SLUICE_NATS_REPLICAS").pipe(
    Config.withDefault(1),
    Config.validate({ message: "SLUICE_NATS_REPLICAS must be from 1 to 5", validation: (n) => n >= 1 && n <= 5 }),
  ),
  natsAllowOldServer: Config.boolean("SLUICE_NATS_ALLOW_OLD_SERVER").pipe(Config.withDefault(false)),
  modelsPath: Config.option(Config.string("SLUICE_MODELS")),
  bootstrapKey: Config.option(Config.redacted("SLUICE_BOOTSTRAP_KEY")),
  adminToken: Config.option(Config.redacted("SLUICE_ADMIN_TOKEN")),
  completionWindowHours: Config.number("SLUICE_COMPLETION_WINDOW_HOURS").pipe(Config.withDefault(24)),
  retentionDays: Config.number("SLUICE_RETENTION_DAYS").pipe(
    Config.withDefault(7),
    Config.validate({ message: "SLUICE_RETENTION_DAYS must be positive", validation: (days) => days > 0 }),
  ),
  maxUnfinishedBatches: Config.integer("SLUICE_MAX_UNFINISHED_BATCHES").pipe(
    Config.withDefault(10),
    Config.validate({ message: "SLUICE_MAX_UNFINISHED_BATCHES must be at least 1", validation: (n) => n >= 1 }),
  ),
  leaseTtlMs: Config.integer("SLUICE_LEASE_TTL_MS").pipe(
    Config.withDefault(10_000),
    Config.validate({ message: "SLUICE_LEASE_TTL_MS must be at least 1000", validation: (ms) => ms >= 1000 }),
  ),
  // The cores the dispatch thread and the upstream thread leave: none on one core, where this process serves HTTP itself.
  httpWorkers: Config.integer("SLUICE_HTTP_WORKERS").pipe(
    Config.withDefault(Math.min(availableParallelism() - 1, 16)),
    Config.validate({ message: "SLUICE_HTTP_WORKERS must be from 0 to 64", validation: (n) => n >= 0 && n <= 64 }),
  ),
  runModels: Config.boolean("SLUICE_RUN_MODELS").pipe(Config.withDefault(true)),
  instanceId: Config.string("SLUICE_INSTANCE_ID").pipe(Config.withDefault(`${hostname()}-${process.pid}`)),
  metricsToken: Config.option(Config.redacted("SLUICE_METRICS_TOKEN")),
  corsOrigins: Config.array(Config.string(), "SLUICE_CORS_ORIGINS").pipe(
    Config.map((origins) => origins.map((o) => o.trim()).filter((o) => o !== "")),
    Config.withDefault([] as Array<string>),
  ),
  readyMaxLagSeconds: Config.number("SLUICE_READY_MAX_LAG_SECONDS").pipe(
    Config.withDefault(30),
    Config.validate({ message: "SLUICE_READY_MAX_LAG_SECONDS must be positive", validation: (s) => s > 0 }),
  ),
  logFormat: Config.literal("text", "json", "pretty")("SLUICE_LOG_FORMAT").pipe(Config.withDefault("text" as const)),
  logLevel: Config.string("SLUICE_LOG_LEVEL").pipe(
    Config.withDefault("info"),
    Config.mapOrFail((text) => {
      const label = text.trim().toUpperCase().replace(/^WARNING$/, "WARN").replace(/^NONE$/, "OFF")
      const level = LogLevel.allLevels.find((l) => l.label === label)
      return level === undefined
        ? Either.left(
            ConfigError.InvalidData(["SLUICE_LOG_LEVEL"], `must be one of trace, debug, info, warn, error, fatal, off; got '${text}'`),
          )
        : Either.right(level)
    }),
  ),
}).pipe(
  // The embedded log serves one instance, which must run the models or nothing would.
  Config.validate({
    message: "SLUICE_RUN_MODELS=false needs NATS_URL: an instance that runs no models serves beside others on NATS, and on the embedded log it is the only one",
    validation: (config) => config.runModels || config.natsUrl._tag === "Some",
  }),
)
export type SluiceConfig = Config.Config.Success<typeof SluiceConfig>
