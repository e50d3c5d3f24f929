import { Duration, Effect } from "effect"
import type { ModelEntry } from "../config/Catalog.js"
import { isObject } from "../domain/json.js"

export type TokenSource = "upstream" | "approximate"

export interface PromptTokens {
  readonly source: TokenSource
  /** Each row's prompt tokens, in order. */
  readonly counts: ReadonlyArray<number>
  /** The upstream's context length, when it says (vLLM's `max_model_len`). */
  readonly maxModelLen: number | undefined
}

const TOKENIZE_TIMEOUT = Duration.seconds(10)
const IN_FLIGHT = 8
/** OpenAI's accounting for chat messages: a few tokens of framing per message, and the reply's priming. */
const PER_MESSAGE = 3
const PER_REPLY = 3

const tokenizeUrl = (model: ModelEntry) => `${model.upstreamUrl.replace(/\/v1$/, "")}/tokenize`

class NoTokenizer {}

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return content === undefined || content === null ? "" : JSON.stringify(content)
  return content.map((part) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : "")).join("")
}

// Loaded on first use: its ranks are a few MB, needed only for an upstream without a tokenizer.
let encoder: Promise<{ encode: (text: string) => Array<number> }> | undefined
const approximateEncoder = () => (encoder ??= import("js-tiktoken").then((m) => m.getEncoding("o200k_base")))

/** An embeddings body's inputs: its texts, and the tokens of its token-id arrays, which need no tokenizer. */
const embeddingsInputs = (body: Record<string, unknown>): { readonly texts: ReadonlyArray<string>; readonly tokens: number } => {
  const input = body["input"]
  if (typeof input === "string") return { texts: [input], tokens: 0 }
  if (!Array.isArray(input)) return { texts: [], tokens: 0 }
  if (input.every((i) => typeof i === "number")) return { texts: [], tokens: input.length }
  const texts: Array<string> = []
  let tokens = 0
  for (const one of input) {
    if (typeof one === "string") texts.push(one)
    else if (Array.isArray(one)) tokens += one.length
  }
  return { texts, tokens }
}

/**
 * Prompt tokens of chat bodies (or embeddings bodies' inputs) for one model: the upstream's own
 * tokenizer where it has one (vLLM's `POST /tokenize`, the simulator's too), else OpenAI's o200k
 * encoding over the messages' text, which the answer marks approximate. An embeddings body's texts are
 * tokenized in one call, joined by newlines; its token-id arrays count their ids.
 */
export const countPromptTokens = (
  model: ModelEntry,
  bodies: ReadonlyArray<Record<string, unknown>>,
  embeddings = false,
): Effect.Effect<PromptTokens> => {
  let maxModelLen: number | undefined
  const tokenize = (request: Record<string, unknown>) =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await fetch(tokenizeUrl(model), {
          method: "POST",
          headers: { "content-type": "application/json", ...(model.apiKey === undefined ? {} : { authorization: `Bearer ${model.apiKey}` }) },
          body: JSON.stringify({ model: model.upstreamModel, ...request }),
          signal,
        })
        if (!response.ok) throw new NoTokenizer()
        const answer = (await response.json()) as { count?: unknown; max_model_len?: unknown }
        if (typeof answer.count !== "number") throw new NoTokenizer()
        if (typeof answer.max_model_len === "number") maxModelLen = answer.max_model_len
        return answer.count
      },
      catch: () => new NoTokenizer(),
    }).pipe(Effect.timeoutFail({ duration: TOKENIZE_TIMEOUT, onTimeout: () => new NoTokenizer() }))
  const upstream = (body: Record<string, unknown>): Effect.Effect<number, NoTokenizer> => {
    if (!embeddings) return tokenize({ messages: body["messages"] })
    const { texts, tokens } = embeddingsInputs(body)
    return texts.length === 0 ? Effect.succeed(tokens) : Effect.map(tokenize({ prompt: texts.join("\n") }), (n) => n + tokens)
  }
  const approximate = Effect.promise(async () => {
    const enc = await approximateEncoder()
    return bodies.map((body) => {
      if (embeddings) {
        const { texts, tokens } = embeddingsInputs(body)
        return texts.reduce((n, text) => n + enc.encode(text).length, tokens)
      }
      const messages = Array.isArray(body["messages"]) ? body["messages"] : []
      let n = PER_REPLY
      for (const m of messages) n += PER_MESSAGE + (isObject(m) ? enc.encode(textOf(m["content"])).length : 0)
      return n
    })
  })
  return Effect.gen(function* () {
    const [first, ...rest] = bodies
    if (first === undefined) return { source: "upstream" as const, counts: [], maxModelLen: undefined }
    // The first row tells whether the upstream tokenizes at all; the rest go in parallel.
    const head = yield* Effect.either(upstream(first))
    if (head._tag === "Right") {
      const tail = yield* Effect.either(Effect.forEach(rest, upstream, { concurrency: IN_FLIGHT }))
      if (tail._tag === "Right") return { source: "upstream" as const, counts: [head.right, ...tail.right], maxModelLen }
    }
    return { source: "approximate" as const, counts: yield* approximate, maxModelLen: undefined }
  })
}
