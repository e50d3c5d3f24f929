import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type RunStanding, shownOf } from "../../src/domain/response/standing.js"

const answer = { status_code: 200, request_id: "req_1", body: { choices: [] } }
const run = (over: Partial<RunStanding>): RunStanding => ({
  batchStatus: "in_progress",
  rowStatus: "queued",
  rowResponse: null,
  rowError: null,
  batchError: null,
  ...over,
})

describe("a response run as a one-row batch shows", () => {
  it("in_progress while its batch is not final, whatever its row did", () =>
    fc.assert(
      fc.property(
        fc.constantFrom("validating", "in_progress", "cancelling"),
        fc.constantFrom("queued", "running", "completed", "failed", "cancelled", "expired"),
        (batchStatus, rowStatus) => {
          expect(shownOf(run({ batchStatus, rowStatus, rowResponse: answer }))._tag).toBe("InProgress")
        },
      ),
    ))

  it("the model's answer once its batch completed with the row completed", () =>
    expect(shownOf(run({ batchStatus: "completed", rowStatus: "completed", rowResponse: answer }))).toEqual({ _tag: "Answered", response: answer }))

  it("the row's error when the row failed", () =>
    expect(
      shownOf(run({ batchStatus: "completed", rowStatus: "failed", rowError: { code: "upstream_error", message: "boom", status: 500 } })),
    ).toEqual({ _tag: "Failed", error: { code: "upstream_error", message: "boom" } }))

  it("the seed's batch_expired when it did not start within its window", () =>
    expect(
      shownOf(run({ batchStatus: "expired", rowStatus: "expired", rowError: { code: "batch_expired", message: "Not run: the window closed first" } })),
    ).toEqual({ _tag: "Failed", error: { code: "batch_expired", message: "Not run: the window closed first" } }))

  it("the batch's error when the key that made it was revoked and the row has none of its own", () =>
    expect(
      shownOf(run({ batchStatus: "failed", rowStatus: "failed", batchError: { code: "owner_unauthorized", message: "revoked" } })),
    ).toEqual({ _tag: "Failed", error: { code: "owner_unauthorized", message: "revoked" } }))

  it("cancelled, keeping an answer its running call brought back", () => {
    expect(shownOf(run({ batchStatus: "cancelled", rowStatus: "completed", rowResponse: answer }))).toEqual({ _tag: "Cancelled", response: answer })
    expect(shownOf(run({ batchStatus: "cancelled", rowStatus: "cancelled" }))).toEqual({ _tag: "Cancelled", response: null })
  })
})
