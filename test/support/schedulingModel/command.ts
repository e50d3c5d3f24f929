import type fc from "fast-check"
import { checkInvariants } from "./invariants.js"
import { type World, partitionOver, settle } from "./world.js"

export type Command = fc.AsyncCommand<object, World>

/** A step: it runs when `check` allows, and every invariant is checked after it. Its name is how a counterexample prints it. */
export const command = (name: string, run: (w: World) => Promise<void>, check: (w: World) => boolean = () => true): Command => ({
  check: () => true,
  run: async (_model, w) => {
    if (!check(w)) return
    await run(w)
    await settle()
    await partitionOver(w)
    await checkInvariants(w)
  },
  toString: () => name,
})
