import { Either } from "effect"
import { type ExpiresAfter, MAX_EXPIRES_AFTER_S, MIN_EXPIRES_AFTER_S } from "./retention.js"
import { OpenAIFilePurposes } from "./events.js"

/** OpenAI's limits on a batch input file: 200 MB (taken as MiB) and 50,000 requests, one a line. */
export const MAX_FILE_BYTES = 200 * 1024 * 1024
export const MAX_BATCH_FILE_LINES = 50_000

/** The bytes of a file as they stream past: enough to count its lines without keeping any. */
export interface ContentCount {
  readonly bytes: number
  readonly newlines: number
  readonly lastByte: number | undefined
}

export const noContent: ContentCount = { bytes: 0, newlines: 0, lastByte: undefined }

const NEWLINE = 10

export const countChunk = (count: ContentCount, chunk: Uint8Array): ContentCount => {
  if (chunk.length === 0) return count
  let newlines = count.newlines
  for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) newlines++
  return { bytes: count.bytes + chunk.length, newlines, lastByte: chunk[chunk.length - 1] }
}

/** A line is what ends in a newline, and the text after the last one if there is any. */
export const linesOf = (count: ContentCount) => count.newlines + (count.lastByte !== undefined && count.lastByte !== NEWLINE ? 1 : 0)

/** What a multipart upload held, once read to its end (or as far as it was read). */
export interface UploadForm {
  /** Each value of each text field, by name, in the order they came. */
  readonly fields: ReadonlyMap<string, ReadonlyArray<string>>
  /** The names of the file parts, in order. */
  readonly fileParts: ReadonlyArray<string>
  /** The `file` part's filename, as sent. */
  readonly filename: string | undefined
  readonly content: ContentCount
  /** The content went past MAX_FILE_BYTES: reading stopped there. */
  readonly tooLarge: boolean
}

export interface UploadRefused {
  readonly status: 400 | 413
  readonly message: string
  readonly param: string | null
}

export interface AcceptedUpload {
  readonly filename: string
  readonly purpose: "batch"
  readonly expiresAfter: ExpiresAfter | undefined
  readonly bytes: number
  readonly lines: number
}

const KNOWN_FIELDS = new Set(["purpose", "expires_after[anchor]", "expires_after[seconds]"])
const refuse = (message: string, param: string | null, status: 400 | 413 = 400) => Either.left<UploadRefused>({ status, message, param })
const quoted = (value: string) => JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)

/** Whether the form, as far as it was read, can be stored; the purpose may come after the file, so this is decided at the end. */
export const decideUpload = (form: UploadForm): Either.Either<AcceptedUpload, UploadRefused> => {
  if (form.tooLarge) {
    return refuse(`'file' is larger than the limit of ${MAX_FILE_BYTES} bytes (200 MB) for a file`, "file", 413)
  }
  if (form.fields.has("file")) return refuse("'file' must be a file: a part with a filename (the part's Content-Disposition filename)", "file")
  for (const [name, values] of form.fields) {
    if (!KNOWN_FIELDS.has(name)) return refuse(`Unknown field '${name}': an upload takes 'file', 'purpose' and 'expires_after'`, name)
    if (values.length > 1) return refuse(`'${name}' may be given only once`, name)
  }
  const field = (name: string) => form.fields.get(name)?.[0]
  for (const name of form.fileParts) {
    if (name !== "file") return refuse(`Unknown file field '${name}': the file goes in the field 'file'`, name)
  }
  const purpose = field("purpose")
  if (purpose === undefined) return refuse("'purpose' is required: send 'batch'", "purpose")
  if (purpose !== "batch") {
    const known = (OpenAIFilePurposes as ReadonlyArray<string>).includes(purpose)
    return refuse(
      `'purpose' must be 'batch'${known ? " (Sluice keeps files for the Batch API only)" : ""}, got ${quoted(purpose)}`,
      "purpose",
    )
  }
  if (form.fileParts.length === 0) return refuse("'file' is required: send the file as a multipart part named 'file'", "file")
  if (form.fileParts.length > 1) return refuse("'file' may be given only once", "file")
  if (form.filename === undefined || form.filename.trim() === "") {
    return refuse("'file' must have a filename (the part's Content-Disposition filename)", "file")
  }
  const anchor = field("expires_after[anchor]")
  const seconds = field("expires_after[seconds]")
  let expiresAfter: ExpiresAfter | undefined
  if (anchor !== undefined || seconds !== undefined) {
    if (anchor !== "created_at") {
      return refuse(`'expires_after[anchor]' must be 'created_at', got ${anchor === undefined ? "nothing" : quoted(anchor)}`, "expires_after[anchor]")
    }
    const n = seconds !== undefined && /^[0-9]{1,10}$/.test(seconds) ? Number(seconds) : Number.NaN
    if (!(n >= MIN_EXPIRES_AFTER_S && n <= MAX_EXPIRES_AFTER_S)) {
      return refuse(
        `'expires_after[seconds]' must be a whole number from ${MIN_EXPIRES_AFTER_S} (1 hour) to ${MAX_EXPIRES_AFTER_S} (30 days), got ${
          seconds === undefined ? "nothing" : quoted(seconds)
        }`,
        "expires_after[seconds]",
      )
    }
    expiresAfter = { anchor: "created_at", seconds: n }
  }
  if (form.content.bytes === 0) return refuse("'file' is empty: a batch file holds one request a line", "file")
  const lines = linesOf(form.content)
  if (lines > MAX_BATCH_FILE_LINES) {
    return refuse(`'file' has more than ${MAX_BATCH_FILE_LINES} lines, the limit for a batch file (one request a line)`, "file")
  }
  return Either.right({ filename: form.filename, purpose: "batch", expiresAfter, bytes: form.content.bytes, lines })
}

/**
 * Cuts text into lines as `linesOf` counts them: at each `\n`, a `\r` before it dropped, and the text after
 * the last one a line if there is any. Fed chunk by chunk, it holds only the line not yet ended.
 */
export const makeLineSplitter = () => {
  let rest = ""
  const line = (text: string) => (text.endsWith("\r") ? text.slice(0, -1) : text)
  return {
    push: (chunk: string): Array<string> => {
      const pieces = (rest + chunk).split("\n")
      rest = pieces.pop()!
      return pieces.map(line)
    },
    end: (): Array<string> => {
      const last = rest
      rest = ""
      return last === "" ? [] : [line(last)]
    },
  }
}
