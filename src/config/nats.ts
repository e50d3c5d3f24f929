import { Option } from "effect"
import type { SluiceConfig } from "./Config.js"

/** Where Sluice's JetStream is, and how many copies of what Sluice creates there the cluster keeps. */
export interface NatsDeployment {
  /** NATS_URL as given: one server, or several separated by commas, between which the client fails over. */
  readonly url: string
  /** The replica count of every stream and KV bucket Sluice creates (`num_replicas`, `replicas`). */
  readonly replicas: number
  /** SLUICE_NATS_ALLOW_OLD_SERVER: keep replicas on a release older than OLDEST_SERVER_FOR_REPLICAS, accepting the risk. */
  readonly allowOldServer: boolean
}

/**
 * The oldest nats-server release on which the partition suite (test/partitions) holds with replicated
 * streams: on older ones a stream leader cut off in a minority can keep a message the majority never
 * stored, and the replicas stay different after the heal (docs/scaling.md).
 */
export const OLDEST_SERVER_FOR_REPLICAS = "2.10.27"

const parts = (version: string) => version.replace(/^v/, "").split(/[.-]/).slice(0, 3).map((p) => Number.parseInt(p, 10) || 0)

/** Whether `version` (as nats-server reports it, `2.10.27`) is `oldest` or newer. */
export const releaseAtLeast = (version: string, oldest: string): boolean => {
  const [a, b] = [parts(version), parts(oldest)]
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
  return true
}

/** The one place the replica count of Sluice's stream and KV buckets comes from; none on the embedded log. */
export const natsDeployment = (config: SluiceConfig): Option.Option<NatsDeployment> =>
  Option.map(config.natsUrl, (url) => ({ url, replicas: config.natsReplicas, allowOldServer: config.natsAllowOldServer }))
