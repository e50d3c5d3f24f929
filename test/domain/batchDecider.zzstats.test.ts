import { Either } from "effect"
import fc from "fast-check"
import { it } from "vitest"
import { decide } from "../../src/domain/batch/decide.js"
import { evolve, initialState } from "../../src/domain/batch/state.js"
import { batchCreated, batchId, commandFor, createdAt, scenario } from "./arbitraries/batchCommands.js"

it("stats", () => {
  const tally: Record<string, number> = {}
  const bump = (k: string) => (tally[k] = (tally[k] ?? 0) + 1)
  let steps = 0
  for (const s of fc.sample(scenario, { numRuns: 300, seed: 42 })) {
    let state = evolve(initialState(batchId), batchCreated(s.total))
    let at = createdAt
    const seen = new Set<string>()
    steps += s.steps.length
    for (const step of s.steps) {
      at += step.dt
      const c = commandFor(step, state, at)
      const d = decide(c, state)
      if (Either.isLeft(d)) { bump(`cmd:${c.type}:rejected:${d.left._tag}`); continue }
      bump(`cmd:${c.type}:${d.right.length > 0 ? "emits" : "nothing"}`)
      for (const e of d.right) {
        seen.add(e.type)
        if (e.type === "row_started" && e.attempt === 8) seen.add("attempt8")
        if (e.type === "row_failed" && e.attempt === 8) seen.add("failedAt8")
        if (e.type === "row_cancelled") seen.add(`row_cancelled_in_${state.status}`)
        if (e.type === "batch_cancelling" && state.running > 0) seen.add("cancel_with_running")
      }
      state = d.right.reduce(evolve, state)
    }
    seen.add(`final:${state.status}${state.deleted ? "+deleted" : ""}`)
    for (const k of seen) bump(`runs:${k}`)
  }
  console.log(`steps ${steps}\n` + Object.entries(tally).sort().map(([k, v]) => `${k}: ${v}`).join("\n"))
})
