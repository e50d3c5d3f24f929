import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { CreateRejected } from "../../src/domain/batch/validateCreate.js"
import { fileLineChecker, isFileBatchBody, validateFileBatchRequest } from "../../src/domain/file/fileBatch.js"

const catalog = { isAvailable: (m: string) => m === "m", endpointsOf: () => ["/v1/chat/completions" as const] }
const line = (customId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body: { model: "m", messages: [{ role: "user", content: "hi" }] }, ...extra })

describe("a batch created from a file", () => {
  it("is a body with input_file_id and no requests", () => {
    expect(isFileBatchBody({ input_file_id: "file-1", endpoint: "/v1/chat/completions" })).toBe(true)
    expect(isFileBatchBody({ input_file_id: "file-1", requests: [] })).toBe(false)
    expect(isFileBatchBody({ requests: [] })).toBe(false)
    expect(isFileBatchBody(null)).toBe(false)
  })

  it("needs a file id and one of the three endpoints, and checks metadata as a create does", () => {
    expect(validateFileBatchRequest({ input_file_id: "file-1", endpoint: "/v1/embeddings", completion_window: "7d" })).toEqual(
      Either.right({ inputFileId: "file-1", endpoint: "/v1/embeddings", metadata: null, priority: "standard" }),
    )
    const param = (input: unknown) => Either.match(validateFileBatchRequest(input), { onLeft: (e) => e.param, onRight: () => "accepted" })
    expect(param({ input_file_id: "file-1" })).toBe("endpoint")
    expect(param({ input_file_id: "file-1", endpoint: "/v1/completions" })).toBe("endpoint")
    expect(param({ input_file_id: 7, endpoint: "/v1/embeddings" })).toBe("input_file_id")
    expect(param({ input_file_id: "", endpoint: "/v1/embeddings" })).toBe("input_file_id")
    expect(param({ input_file_id: "file-1", endpoint: "/v1/embeddings", metadata: { k: 1 } })).toBe("metadata.k")
    expect(param({ input_file_id: "file-1", endpoint: "/v1/embeddings", priority: "urgent" })).toBe("priority")
    expect(validateFileBatchRequest({ input_file_id: "file-1", endpoint: "/v1/embeddings", priority: "background" })).toEqual(
      Either.right({ inputFileId: "file-1", endpoint: "/v1/embeddings", metadata: null, priority: "background" }),
    )
  })

  it("checks each line by an inline row's rules, naming it by its line number", () => {
    const check = fileLineChecker("file-1", "/v1/chat/completions", catalog)
    expect(check(line("a"))).toMatchObject({ custom_id: "a", model: "m" })
    const rejected = (r: unknown) => (r instanceof CreateRejected ? { message: r.message, param: r.param } : r)
    expect(rejected(check(""))).toMatchObject({ message: "line 2 is empty: every line of the file must be one request", param: "line 2" })
    expect(rejected(check("{nope"))).toMatchObject({ param: "line 3" })
    expect((rejected(check("{nope")) as { message: string }).message).toMatch(/^line 4 is not valid JSON/)
    expect(rejected(check(line("a")))).toMatchObject({ param: "line 5.custom_id" })
    expect((rejected(check(line("a"))) as { message: string }).message).toMatch(/^line 6 \(custom_id 'a'\): .*line 1/)
    expect(rejected(check(line("b", { url: "/v1/embeddings" })))).toMatchObject({ param: "line 7.url" })
    expect(rejected(check(line("c", { body: { model: "x", messages: [{ role: "user", content: "hi" }] } })))).toMatchObject({
      message: "line 8 (custom_id 'c'): Model 'x' not found",
      param: "line 8.body.model",
    })
  })

  it("refuses a line past the limit of requests", () => {
    const check = fileLineChecker("file-1", "/v1/chat/completions", catalog, { maxRequests: 2 })
    expect(check(line("a"))).not.toBeInstanceOf(CreateRejected)
    expect(check(line("b"))).not.toBeInstanceOf(CreateRejected)
    const third = check(line("c"))
    expect(third).toBeInstanceOf(CreateRejected)
    expect((third as CreateRejected).message).toBe("The file 'file-1' holds more than 2 requests, the limit of a batch; split it into several files")
  })
})
