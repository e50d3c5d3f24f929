import fc from "fast-check"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { batchOfFileId } from "../../src/domain/file/batchFiles.js"
import { isUploadedFileId, uploadedFileId } from "../../src/domain/file/fileId.js"
import { DEFAULT_BATCH_FILE_RETENTION_S, expiresAt, purgeDueAt } from "../../src/domain/file/retention.js"
import { countChunk, decideUpload, linesOf, makeLineSplitter, MAX_BATCH_FILE_LINES, MAX_FILE_BYTES, noContent, type UploadForm } from "../../src/domain/file/upload.js"

const bytes = (text: string) => new TextEncoder().encode(text)
const counted = (text: string) => countChunk(noContent, bytes(text))
const form = (over: Partial<UploadForm> & { readonly text?: string } = {}): UploadForm => ({
  fields: new Map([["purpose", ["batch"]]]),
  fileParts: ["file"],
  filename: "rows.jsonl",
  content: counted(over.text ?? '{"a":1}\n'),
  tooLarge: false,
  ...over,
})
const refusal = (f: UploadForm) => Either.getLeft(decideUpload(f)).pipe((o) => (o._tag === "Some" ? o.value : undefined))

describe("a file's lines, counted as its bytes stream past", () => {
  it(
    "are the lines the splitter cuts, wherever the chunks are cut, and a line is all its text without its newline", () => fc.assert(fc.property(fc.array(fc.constantFrom("a", "é", "\n", "\r", "{", "}"), { maxLength: 200 }).map((cs) => cs.join("")), fc.array(fc.nat(), { maxLength: 6 }), (text, cuts) => {
      const data = bytes(text)
      const at = [...new Set(cuts.map((c) => c % (data.length + 1)))].sort((a, b) => a - b)
      let count = noContent
      let from = 0
      for (const cut of [...at, data.length]) {
        count = countChunk(count, data.subarray(from, cut))
        from = cut
      }
      const splitter = makeLineSplitter()
      const lines = [...at, text.length].flatMap((cut, i, all) => splitter.push(text.slice(i === 0 ? 0 : Math.min(all[i - 1]!, text.length), Math.min(cut, text.length)))).concat(splitter.end())
      expect(count.bytes).toBe(data.length)
      expect(linesOf(count)).toBe(lines.length)
      const pieces = text.split("\n")
      if (pieces[pieces.length - 1] === "") pieces.pop()
      expect(lines).toEqual(pieces.map((l) => l.replace(/\r$/, "")))
    })))

  it("counts a last line without its newline, and no line after a final newline", () => {
    expect(linesOf(counted("a\nb"))).toBe(2)
    expect(linesOf(counted("a\nb\n"))).toBe(2)
    expect(linesOf(counted("\n"))).toBe(1)
    expect(linesOf(noContent)).toBe(0)
  })
})

describe("an upload, judged once its form has been read", () => {
  it("is accepted with purpose batch, a filename and content, before or after the file", () => {
    expect(decideUpload(form())).toEqual(Either.right({ filename: "rows.jsonl", purpose: "batch", expiresAfter: undefined, bytes: 8, lines: 1 }))
  })

  it("refuses what OpenAI refuses, naming the field, 413 for size only", () => {
    expect(refusal(form({ tooLarge: true }))).toMatchObject({ status: 413, param: "file" })
    expect(refusal(form({ fields: new Map() }))).toMatchObject({ status: 400, param: "purpose", message: expect.stringContaining("required") })
    expect(refusal(form({ fields: new Map([["purpose", ["fine-tune"]]]) }))).toMatchObject({ status: 400, param: "purpose", message: expect.stringContaining('got "fine-tune"') })
    expect(refusal(form({ fields: new Map([["purpose", ["batch", "batch"]]]) }))).toMatchObject({ param: "purpose" })
    expect(refusal(form({ fileParts: [] }))).toMatchObject({ status: 400, param: "file", message: expect.stringContaining("required") })
    expect(refusal(form({ fileParts: ["file", "file"] }))).toMatchObject({ param: "file" })
    expect(refusal(form({ fileParts: ["file", "other"] }))).toMatchObject({ param: "other" })
    expect(refusal(form({ filename: undefined }))).toMatchObject({ param: "file", message: expect.stringContaining("filename") })
    expect(refusal(form({ text: "" }))).toMatchObject({ param: "file", message: expect.stringContaining("empty") })
    expect(refusal(form({ text: "x\n".repeat(MAX_BATCH_FILE_LINES + 1) }))).toMatchObject({ status: 400, param: "file", message: expect.stringContaining("50000 lines") })
    expect(decideUpload(form({ text: "x\n".repeat(MAX_BATCH_FILE_LINES) }))._tag).toBe("Right")
    expect(refusal(form({ fields: new Map([["purpose", ["batch"]], ["model", ["x"]]]) }))).toMatchObject({ param: "model" })
  })

  it("takes expires_after as OpenAI's SDK sends it, from an hour to 30 days after its creation", () => {
    const withExpiry = (anchor: string | undefined, seconds: string | undefined) =>
      form({
        fields: new Map([
          ["purpose", ["batch"]],
          ...(anchor === undefined ? [] : [["expires_after[anchor]", [anchor]] as const]),
          ...(seconds === undefined ? [] : [["expires_after[seconds]", [seconds]] as const]),
        ]),
      })
    expect(decideUpload(withExpiry("created_at", "3600"))).toMatchObject({ right: { expiresAfter: { anchor: "created_at", seconds: 3600 } } })
    expect(decideUpload(withExpiry("created_at", "2592000"))._tag).toBe("Right")
    expect(refusal(withExpiry("created_at", "3599"))).toMatchObject({ param: "expires_after[seconds]" })
    expect(refusal(withExpiry("created_at", "2592001"))).toMatchObject({ param: "expires_after[seconds]" })
    expect(refusal(withExpiry("created_at", "1h"))).toMatchObject({ param: "expires_after[seconds]" })
    expect(refusal(withExpiry("created_at", undefined))).toMatchObject({ param: "expires_after[seconds]" })
    expect(refusal(withExpiry("last_active_at", "3600"))).toMatchObject({ param: "expires_after[anchor]" })
    expect(refusal(withExpiry(undefined, "3600"))).toMatchObject({ param: "expires_after[anchor]" })
  })

  it("is refused 413 exactly when the file was larger than 200 MB", () => fc.assert(fc.property(fc.nat({ max: 2 * MAX_FILE_BYTES }), (size) => {
    const tooLarge = size > MAX_FILE_BYTES
    const decided = decideUpload(form({ tooLarge, content: { bytes: Math.min(size, MAX_FILE_BYTES + 1), newlines: 1, lastByte: 10 } }))
    expect(Either.isLeft(decided) && decided.left.status === 413).toBe(tooLarge)
  })))
})

describe("uploaded files' ids and retention", () => {
  it("an uploaded file's id is never a batch view's", () => fc.assert(fc.property(fc.uint8Array({ minLength: 24, maxLength: 24 }), (random) => {
    const id = uploadedFileId(random)
    expect(isUploadedFileId(id)).toBe(true)
    expect(batchOfFileId(id)).toBeUndefined()
    expect(id).not.toMatch(/^file-(out|err)-/)
  })))

  it("a batch view's id is no uploaded file's", () => {
    expect(isUploadedFileId("file-out-0123456789abcdef0123456789abcdef")).toBe(false)
    expect(isUploadedFileId("file-err-0123456789abcdef0123456789abcdef")).toBe(false)
    expect(isUploadedFileId("file-abc.>")).toBe(false)
  })

  it(
    "a file expires its expires_after after its creation, 30 days without one, and is purged then unless deleted before", () => fc.assert(fc.property(fc.nat({ max: 4e12 }), fc.option(fc.integer({ min: 3600, max: 2_592_000 }), { nil: undefined }), (created, seconds) => {
      const at = expiresAt(created, seconds === undefined ? undefined : { anchor: "created_at", seconds })
      expect(at).toBe(created + (seconds ?? DEFAULT_BATCH_FILE_RETENTION_S) * 1000)
      expect(purgeDueAt({ status: "processed", expires_at: at })).toBe(at)
      expect(purgeDueAt({ status: "deleted", expires_at: at })).toBeUndefined()
    })))
})
