import { describe, expect, it } from "vitest"
import { progressLogLine, type ProgressView } from "../../src/cli/progress.js"

const view = (status: ProgressView["status"], completed: number, failed = 0): ProgressView => ({
  id: "batch_1",
  status,
  total: 10,
  completed,
  failed,
})

describe("wait's progress text", () => {
  it("shows no rate and no ETA from a single sample", () => {
    const only = { atMs: 1_000, done: 10 }
    expect(progressLogLine(view("completed", 10), only, only)).toBe("batch_1 completed: 10/10 done, 0 failed")
  })

  it("shows the rate and the time left while the batch runs", () => {
    expect(progressLogLine(view("in_progress", 4), { atMs: 0, done: 0 }, { atMs: 2_000, done: 4 })).toBe(
      "batch_1 in_progress: 4/10 done, 0 failed, 2.0 rows/s, ETA 3s",
    )
  })

  it("shows no ETA on a final status, even with rows left unfinished", () => {
    expect(progressLogLine(view("cancelled", 3, 1), { atMs: 0, done: 0 }, { atMs: 1_000, done: 4 })).toBe(
      "batch_1 cancelled: 4/10 done, 1 failed, 4.0 rows/s",
    )
  })

  it("shows no ETA while nothing has finished between samples", () => {
    expect(progressLogLine(view("in_progress", 0), { atMs: 0, done: 0 }, { atMs: 5_000, done: 0 })).toBe(
      "batch_1 in_progress: 0/10 done, 0 failed, 0.0 rows/s",
    )
  })
})
