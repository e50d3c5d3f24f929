import { Context, Effect, Layer } from "effect"

/**
 * What this instance knows of the requests on the other instances of one deployment, and what it
 * tells them of its own: each account's requests in flight (its concurrent-request slots are shared
 * by all instances) and each model's interactive requests (the model's owner gives way to all of them).
 */
export interface LoadSharingShape {
  /** Whether one more request of the account may start here, with `local` of them in flight here, under `concurrency`. */
  readonly mayTake: (accountId: string, local: number, concurrency: number) => boolean
  /**
   * Whether a request refused by `mayTake` may be let in once the others have read this instance's
   * last report (the account has a free slot as far as this instance knows): worth waiting for.
   */
  readonly waitsForOthers: (accountId: string, local: number, concurrency: number) => boolean
  /** The account's requests in flight on the other instances, as their last reports say. */
  readonly accountElsewhere: (accountId: string) => number
  /** The model's interactive requests in flight on the other instances. */
  readonly interactiveElsewhere: (modelId: string) => number
  /** This instance's requests of the account now / its interactive requests on the model now. */
  readonly setAccount: (accountId: string, inFlight: number) => void
  readonly setInteractive: (modelId: string, inFlight: number) => void
  /** Calls `listener` after reports of the others were read; `models` are those whose interactive count moved. */
  readonly onReports: (listener: (models: ReadonlySet<string>) => void) => void
  /** Completes after the next reports are read, or after a short while without any. */
  readonly nextReports: Effect.Effect<void>
}

export class LoadSharing extends Context.Tag("Actors/LoadSharing")<LoadSharing, LoadSharingShape>() {
  /** One instance (the embedded log): the local counts are the whole deployment's. */
  static readonly alone = Layer.succeed(LoadSharing, {
    mayTake: (_accountId, local, concurrency) => local < concurrency,
    waitsForOthers: () => false,
    accountElsewhere: () => 0,
    interactiveElsewhere: () => 0,
    setAccount: () => undefined,
    setInteractive: () => undefined,
    onReports: () => undefined,
    nextReports: Effect.void,
  })
}
