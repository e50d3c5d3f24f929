import { Context, type Option, type Redacted } from "effect"

export interface HttpSettingsShape {
  readonly completionWindowMs: number
  readonly maxUnfinishedBatches: number
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** When set, `/metrics` wants it as a bearer token. */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** `/readyz` answers 503 while the projections are further behind the log than this. */
  readonly readyMaxLagSeconds: number
  /**
   * Several instances may write the log (NATS): a read first waits, briefly, for this instance's
   * projections to reach the last message a call wrote, so that it shows what another instance's call
   * just wrote (freshReads.ts).
   */
  readonly freshReads?: boolean
  /** The port this instance serves: a webhook URL that comes back to it is refused. */
  readonly port?: number
}

export class HttpSettings extends Context.Tag("Http/Settings")<HttpSettings, HttpSettingsShape>() {}
