import { describe, expect, it } from "vitest"
import { batchFileId, batchFiles, batchOfFileId } from "../../src/domain/file/batchFiles.js"

const batch = { id: "batch_6f1c0a7e2b8d4e55a1c3f9d2e4b6a8c0", status: "completed" as const, input_file_id: "file-abc", total: 3, completed: 3 }

describe("a file-based batch's output and error files", () => {
  it("are named from the batch's id and lead back to it", () => {
    const output = batchFileId(batch.id, "output")!
    const error = batchFileId(batch.id, "error")!
    expect(output).toMatch(/^file-/)
    expect(output).not.toBe(error)
    expect(batchOfFileId(output)).toEqual({ batchId: batch.id, kind: "output" })
    expect(batchOfFileId(error)).toEqual({ batchId: batch.id, kind: "error" })
    expect(batchOfFileId("file-abc")).toBeUndefined()
    expect(batchFileId("resp_123", "output")).toBeUndefined()
  })

  it("exist only once the batch is final, each when it has lines", () => {
    expect(batchFiles({ ...batch, status: "in_progress" })).toEqual({ output_file_id: null, error_file_id: null })
    expect(batchFiles(batch)).toEqual({ output_file_id: batchFileId(batch.id, "output"), error_file_id: null })
    expect(batchFiles({ ...batch, status: "cancelled", completed: 0 })).toEqual({ output_file_id: null, error_file_id: batchFileId(batch.id, "error") })
    expect(batchFiles({ ...batch, status: "expired", completed: 1 })).toEqual({
      output_file_id: batchFileId(batch.id, "output"),
      error_file_id: batchFileId(batch.id, "error"),
    })
  })

  it("never exist for an inline batch", () => {
    expect(batchFiles({ ...batch, input_file_id: null })).toEqual({ output_file_id: null, error_file_id: null })
  })
})
