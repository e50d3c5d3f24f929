import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { priorityRefusal } from "../../src/domain/account/priorityAllowance.js"
import { sentPriority } from "../../src/domain/batch/priorityField.js"
import { type ResponseRoute, notQueuedMessage, responsePriority } from "../../src/domain/response/queuedPriority.js"
import { Priorities, type Priority, priorityAllowed } from "../../src/domain/scheduling/priority.js"

const priority = fc.constantFrom(...Priorities)
const asked = fc.option(priority, { nil: undefined })
const route: fc.Arbitrary<ResponseRoute> = fc.oneof(
  priority.map((streamPriority) => ({ _tag: "StreamItem" as const, streamPriority })),
  fc.constantFrom<ResponseRoute>({ _tag: "Background" }, { _tag: "Flex" }, { _tag: "Interactive" }),
)

describe("a response's priority", () => {
  it("a stream's item takes its own priority, else its stream's; a background response its own, else standard", () => {
    for (const stream of Priorities) {
      expect(responsePriority(undefined, { _tag: "StreamItem", streamPriority: stream })).toEqual({ _tag: "Runs", priority: stream })
      for (const own of Priorities) expect(responsePriority(own, { _tag: "StreamItem", streamPriority: stream })).toEqual({ _tag: "Runs", priority: own })
    }
    expect(responsePriority(undefined, { _tag: "Background" })).toEqual({ _tag: "Runs", priority: "standard" })
    expect(responsePriority("background", { _tag: "Background" })).toEqual({ _tag: "Runs", priority: "background" })
  })

  it("a flex or interactive request runs as standard, and naming another priority is refused, not ignored", () => {
    for (const tag of ["Flex", "Interactive"] as const) {
      expect(responsePriority(undefined, { _tag: tag })).toEqual({ _tag: "Runs", priority: "standard" })
      expect(responsePriority("standard", { _tag: tag })).toEqual({ _tag: "Runs", priority: "standard" })
      expect(responsePriority("high", { _tag: tag })).toEqual({ _tag: "Refused", message: notQueuedMessage })
      expect(responsePriority("background", { _tag: tag })).toEqual({ _tag: "Refused", message: notQueuedMessage })
    }
  })

  it("whatever runs runs at the priority asked for, when one was; only a request that is not queued is refused", () => {
    fc.assert(
      fc.property(asked, route, (own, r) => {
        const decided = responsePriority(own, r)
        if (decided._tag === "Runs" && own !== undefined) expect(decided.priority).toBe(own)
        if (decided._tag === "Refused") expect(r._tag === "Flex" || r._tag === "Interactive").toBe(true)
      }),
    )
  })
})

describe("an account's allowance", () => {
  it("refuses exactly what priorityAllowed does, naming the priority asked and the allowance", () => {
    fc.assert(
      fc.property(priority, priority, (wanted: Priority, allowed: Priority) => {
        const refused = priorityRefusal(wanted, allowed)
        expect(refused === undefined).toBe(priorityAllowed(wanted, allowed))
        if (refused !== undefined) {
          expect(refused).toBe(`'priority' '${wanted}' is above what this account may use: its max_priority is '${allowed}' (an admin can raise it)`)
        }
      }),
    )
  })

  it("standard, the default allowance, allows standard and background only", () => {
    expect(Priorities.filter((p) => priorityRefusal(p, "standard") === undefined)).toEqual(["standard", "background"])
  })
})

describe("a sent priority", () => {
  it("absent or null asks for nothing; a priority is taken as sent; anything else is refused naming the field", () => {
    expect(sentPriority(undefined)).toEqual({ _tag: "Absent" })
    expect(sentPriority(null)).toEqual({ _tag: "Absent" })
    for (const p of Priorities) expect(sentPriority(p)).toEqual({ _tag: "Asked", priority: p })
    expect(sentPriority("Urgent", "max_priority")).toEqual({ _tag: "Refused", message: `'max_priority' must be one of high, standard, background, got "Urgent"` })
  })
})
