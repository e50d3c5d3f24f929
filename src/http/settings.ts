import { Context, type Option, type Redacted } from "effect"

export interface HttpSettingsShape {
  readonly completionWindowMs: number
  readonly maxUnfinishedBatches: number
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** When set, `/metrics` wants it as a bearer token. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** `/readyz` answers 503 while the projections are further behind the log than this. */
  readonly readyMaxLagSeconds: number
  /** The port this instance serves: a webhook URL that comes back to it is refused. */
  readonly port?: number
}

export class HttpSettings extends Context.Tag("Http/Settings")<HttpSettings, HttpSettingsShape>() {}
