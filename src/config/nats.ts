import { Option } from "effect"
import type { SluiceConfig } from "./Config.js"

/** Where Sluice's JetStream is, and how many copies of what Sluice creates there the cluster keeps. */
export interface NatsDeployment {
  /** NATS_URL as given: one server, or several separated by commas, between which the client fails over. */
  readonly url: string
  /** The replica count of every stream and KV bucket Sluice creates (`num_replicas`, `replicas`). */
  readonly replicas: number
}

/** The one place the replica count of Sluice's stream and KV buckets comes from; none on the embedded log. */
export const natsDeployment = (config: SluiceConfig): Option.Option<NatsDeployment> =>
  Option.map(config.natsUrl, (url) => ({ url, replicas: config.natsReplicas }))
