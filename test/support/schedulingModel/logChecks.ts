import { expect } from "vitest"
import { type StoredEvent, terminalRowTypes } from "../storedEvents.js"
import { FINAL_EVENTS, type World } from "./world.js"

/**
 * What the log holds of every batch and response, the test's own or not (a flex chat completion, a create
 * whose answer was lost): one closing event at most; no row attempted more than eight times, or settled
 * twice. A tracked one's closing event is noted as its final status.
 */
export const checkLog = (w: World, log: ReadonlyMap<string, ReadonlyArray<StoredEvent>>) => {
  for (const [id, events] of log) {
    const closing = events.filter((e) => FINAL_EVENTS.has(e.type)).map((e) => e.type)
    expect(closing.length, `${id}: ${closing.join(", ")}`).toBeLessThanOrEqual(1)
    const starts = new Map<number, number>()
    const terminals = new Map<number, number>()
    for (const e of events) {
      if (e.row === undefined) continue
      if (e.type === "row_started") starts.set(e.row, (starts.get(e.row) ?? 0) + 1)
      if (terminalRowTypes.has(e.type)) terminals.set(e.row, (terminals.get(e.row) ?? 0) + 1)
    }
    for (const [row, n] of starts) expect(n, `${id} row ${row} started ${n} times`).toBeLessThanOrEqual(8)
    for (const [row, n] of terminals) expect(n, `${id} row ${row} settled ${n} times`).toBe(1)
    const tracked = w.batches.find((b) => b.id === id) ?? w.responses.find((r) => r.id === id)
    if (tracked !== undefined && closing[0] !== undefined && tracked.finalStatus === undefined) {
      tracked.finalStatus = closing[0]
      tracked.until = w.disruptions
    }
  }
}
