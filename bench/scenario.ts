import type { Context, SharedSluice } from "./context.js"
import type { ScenarioResult } from "./figures.js"

export interface Scenario {
  readonly id: string
  readonly title: string
  /** The shared Sluice processes it runs on: started before the first scenario, so no start-up lands inside a run. */
  readonly uses: ReadonlyArray<SharedSluice>
  /** Scenarios whose results it reuses: selected with it by `--only`. */
  readonly requires?: ReadonlyArray<string>
  /** A reason to skip, checked before it runs. */
  readonly skipReason?: () => Promise<string | undefined>
  readonly run: (ctx: Context) => Promise<ScenarioResult>
}
