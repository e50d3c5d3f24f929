import { type Clock, Context, Effect, Layer } from "effect"

/**
 * The clock the actors run on (a TestClock under SLUICE_TEST_CLOCK), for code outside them that must
 * agree with them: the HTTP layer's quota day follows the same clock as the batches' pause.
 */
export class ActorClock extends Context.Tag("Actors/ActorClock")<ActorClock, Clock.Clock>() {
  /** Captures the clock of the context it is built in: build it where the actors are. */
  static readonly layer = Layer.effect(ActorClock, Effect.clock)
}
