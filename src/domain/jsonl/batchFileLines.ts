import { Either, Schema } from "effect"
import { DefaultCreateLimits } from "../batch/createLimits.js"
import { isObject, type JsonObject as Obj } from "../json.js"

/** One batch row as the SDK sends it: a custom id, the request body, and the `url` its line named, if any. */
export interface BatchFileRow {
  readonly custom_id: string
  readonly body: Record<string, unknown>
  /** `/v1/embeddings` when its line named it (a batch calls the endpoint its rows name; none: chat completions). */
  readonly url?: string
}

export interface BatchFileOptions {
  /** Fills `body.model` where a line has none, and is required by content-only lines. */
  readonly model?: string
}

export class BatchFileLineError extends Schema.TaggedError<BatchFileLineError>()("BatchFileLineError", {
  line: Schema.Int,
  message: Schema.String,
}) {}

export const batchEnvelopeUrls: ReadonlyArray<string> = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"]

const envelopeKeys = new Set(["custom_id", "method", "url", "body"])
const contentKeys = new Set(["custom_id", "content"])
const formHint = `expected {"custom_id"?, "body"}, an OpenAI batch line {"custom_id"?, "method", "url", "body"}, or {"custom_id"?, "content"}`

const fail = (line: number, detail: string) => new BatchFileLineError({ line, message: `line ${line}: ${detail}` })

const quoted = (u: unknown) => JSON.stringify(u)

/**
 * Reads lines one at a time, remembering the custom ids: they must be distinct. Rows may name different
 * models, as the API allows; `model` only fills in, and must not contradict a row that names one.
 */
class RowReader {
  readonly rows: Array<BatchFileRow> = []
  private readonly lineOfId = new Map<string, number>()

  constructor(private readonly options: BatchFileOptions) {}

  read(value: unknown, line: number): BatchFileLineError | undefined {
    if (!isObject(value)) return fail(line, `not a JSON object; ${formHint}`)
    const body = "content" in value ? this.contentBody(value, line) : this.envelopeBody(value, line)
    if (body instanceof BatchFileLineError) return body
    const withModel = this.resolveModel(body, line)
    if (withModel instanceof BatchFileLineError) return withModel
    const customId = this.customId(value["custom_id"], line)
    if (customId instanceof BatchFileLineError) return customId
    // An embeddings line keeps its url, so that its batch calls /v1/embeddings; a /v1/responses line is sent
    // without it, as before that endpoint could be batched: its body is converted and answered as chat.
    this.rows.push(value["url"] === "/v1/embeddings" ? { custom_id: customId, body: withModel, url: "/v1/embeddings" } : { custom_id: customId, body: withModel })
    return undefined
  }

  private contentBody(value: Obj, line: number): Obj | BatchFileLineError {
    for (const key in value) {
      if (!contentKeys.has(key)) return fail(line, `a content-only line has only "content" and "custom_id", not ${quoted(key)}`)
    }
    const content = value["content"]
    if (typeof content !== "string") return fail(line, `"content" must be a string`)
    const model = this.options.model
    if (model === undefined) return fail(line, `a content-only line needs a model: pass --model (CLI) or model (SDK)`)
    return { model, messages: [{ role: "user", content }] }
  }

  private envelopeBody(value: Obj, line: number): Obj | BatchFileLineError {
    for (const key in value) {
      if (!envelopeKeys.has(key)) return fail(line, `unexpected field ${quoted(key)}; ${formHint}`)
    }
    if ("method" in value && value["method"] !== "POST") {
      return fail(line, `"method" must be "POST", got ${quoted(value["method"])}`)
    }
    if ("url" in value && !batchEnvelopeUrls.includes(value["url"] as string)) {
      return fail(line, `"url" must be one of ${batchEnvelopeUrls.map(quoted).join(", ")}, got ${quoted(value["url"])}`)
    }
    if (!("body" in value)) return fail(line, `no "body"; ${formHint}`)
    const body = value["body"]
    if (!isObject(body)) return fail(line, `"body" must be a JSON object`)
    return body
  }

  private resolveModel(body: Obj, line: number): Obj | BatchFileLineError {
    const given = this.options.model
    let model = body["model"]
    let resolved = body
    if (model === undefined && given !== undefined) {
      model = given
      resolved = { model: given, ...body }
    }
    if (model === undefined) return fail(line, `the body has no "model": add one, or pass --model (CLI) or model (SDK)`)
    if (typeof model !== "string") return fail(line, `"body.model" must be a string`)
    if (given !== undefined && model !== given) {
      return fail(line, `the body names model ${quoted(model)} but the model given is ${quoted(given)}`)
    }
    return resolved
  }

  private customId(given: unknown, line: number): string | BatchFileLineError {
    if (given !== undefined) {
      if (typeof given !== "string" || given.length === 0) return fail(line, `"custom_id" must be a non-empty string`)
      if (given.length > DefaultCreateLimits.maxCustomIdLength) {
        return fail(line, `"custom_id" is longer than ${DefaultCreateLimits.maxCustomIdLength} characters`)
      }
    }
    const id = given === undefined ? `line-${line}` : given
    const earlier = this.lineOfId.get(id)
    if (earlier !== undefined) return fail(line, `custom_id ${quoted(id)} repeats the one of line ${earlier}`)
    this.lineOfId.set(id, line)
    return id
  }
}

/**
 * Reads a JSONL batch file: one row per non-blank line, each an OpenAI batch line, a bare
 * `{custom_id?, body}` or a content-only `{custom_id?, content}`. Lines are numbered from 1,
 * blank ones included; a row without a custom id gets `line-<n>`.
 */
export const parseBatchFile = (
  text: string,
  options: BatchFileOptions = {},
): Either.Either<ReadonlyArray<BatchFileRow>, BatchFileLineError> => {
  const reader = new RowReader(options)
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0
  for (let line = 1; start <= text.length; line++) {
    let end = text.indexOf("\n", start)
    if (end === -1) end = text.length
    const source = text.slice(start, end)
    start = end + 1
    if (source.trim().length === 0) continue
    let value: unknown
    try {
      value = JSON.parse(source)
    } catch (e) {
      return Either.left(fail(line, `not valid JSON (${e instanceof Error ? e.message : String(e)})`))
    }
    const error = reader.read(value, line)
    if (error !== undefined) return Either.left(error)
  }
  return Either.right(reader.rows)
}

/** Reads already-parsed rows by the same rules, each as the line of a JSONL file at its 1-based position. */
export const parseBatchRecords = (
  records: ReadonlyArray<unknown>,
  options: BatchFileOptions = {},
): Either.Either<ReadonlyArray<BatchFileRow>, BatchFileLineError> => {
  const reader = new RowReader(options)
  for (let i = 0; i < records.length; i++) {
    const error = reader.read(records[i], i + 1)
    if (error !== undefined) return Either.left(error)
  }
  return Either.right(reader.rows)
}
