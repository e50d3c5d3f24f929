import { Context, type Option, type Redacted } from "effect"

export interface HttpSettingsShape {
  readonly completionWindowMs: number
  readonly maxUnfinishedBatches: number
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
}

export class HttpSettings extends Context.Tag("Http/Settings")<HttpSettings, HttpSettingsShape>() {}
