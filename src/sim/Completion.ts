import type { ChatRequest } from "./ChatRequest.js"

/** Roughly one token per four characters, as the OpenAI docs suggest for English text. */
export const CHARS_PER_TOKEN = 4
const SNIPPET_CHARS = 80
/** Characters per streamed chunk (about four tokens). */
const STREAM_PIECE_CHARS = 16

export interface Answer {
  readonly content: string
  readonly finishReason: "stop" | "length"
  readonly promptTokens: number
  readonly completionTokens: number
}

const tokensOf = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN)

/** Deterministic from the prompt; `tokens` forces the completion length before max_tokens applies. */
export const answerFor = (request: ChatRequest, tokens: number | undefined): Answer => {
  const base = `Simulated answer to: ${request.lastUserText.slice(0, SNIPPET_CHARS)}`
  let content = base
  let completionTokens = tokensOf(base.length)
  if (tokens !== undefined) {
    const chars = tokens * CHARS_PER_TOKEN
    content = `${base} `.repeat(Math.ceil(chars / (base.length + 1))).slice(0, chars)
    completionTokens = tokens
  }
  let finishReason: Answer["finishReason"] = "stop"
  if (request.maxTokens !== undefined && completionTokens > request.maxTokens) {
    content = content.slice(0, request.maxTokens * CHARS_PER_TOKEN)
    completionTokens = request.maxTokens
    finishReason = "length"
  }
  return { content, finishReason, promptTokens: Math.max(1, tokensOf(request.promptChars)), completionTokens }
}

const usageJson = (answer: Answer): string =>
  `{"prompt_tokens":${answer.promptTokens},"completion_tokens":${answer.completionTokens},"total_tokens":${
    answer.promptTokens + answer.completionTokens
  }}`

/** A chat.completion body; `quotedModel` is the model name already JSON-encoded. */
export const completionJson = (id: string, created: number, quotedModel: string, answer: Answer): string =>
  `{"id":"${id}","object":"chat.completion","created":${created},"model":${quotedModel},` +
  `"choices":[{"index":0,"message":{"role":"assistant","content":${JSON.stringify(answer.content)}},` +
  `"logprobs":null,"finish_reason":"${answer.finishReason}"}],"usage":${usageJson(answer)}}`

/** The whole Server-Sent Events body of a streamed answer, ending with `data: [DONE]`. */
export const completionStream = (
  id: string,
  created: number,
  quotedModel: string,
  answer: Answer,
  includeUsage: boolean,
): string => {
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${quotedModel},"choices":`
  const chunk = (delta: string, finishReason: string): string =>
    `${head}[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finishReason}}]}\n\n`
  let sse = chunk(`{"role":"assistant","content":""}`, "null")
  for (let at = 0; at < answer.content.length; at += STREAM_PIECE_CHARS) {
    sse += chunk(`{"content":${JSON.stringify(answer.content.slice(at, at + STREAM_PIECE_CHARS))}}`, "null")
  }
  sse += chunk("{}", `"${answer.finishReason}"`)
  if (includeUsage) sse += `${head}[],"usage":${usageJson(answer)}}\n\n`
  return `${sse}data: [DONE]\n\n`
}
