import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { SseRelay } from "../../src/domain/chat/SseRelay.js"
import { upstreamChatBody, validateChatRequest } from "../../src/domain/chat/chatRequest.js"

const known = (model: string) => model === "m"

describe("validating a chat-completion request", () => {
  it("accepts a request with a model the caller may use and messages with roles", () => {
    const valid = validateChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 0 }, known)
    expect(Either.getOrThrow(valid)).toMatchObject({ model: "m", stream: false, wantsUsage: false })
  })

  it("reports an unknown or forbidden model as not found", () => {
    expect(validateChatRequest({ model: "x", messages: [] }, known)).toEqual(
      Either.left({ _tag: "ModelNotFound", message: "Model 'x' not found" }),
    )
  })

  it.each([
    [null, null],
    [{ messages: [{ role: "user", content: "hi" }] }, "model"],
    [{ model: "", messages: [{ role: "user", content: "hi" }] }, "model"],
    [{ model: "m", messages: [] }, "messages"],
    [{ model: "m", messages: [{ content: "no role" }] }, "messages[0].role"],
    [{ model: "m", messages: [{ role: "user" }] }, "messages[0].content"],
    [{ model: "m", messages: [{ role: "user", content: "hi" }], stream: "yes" }, "stream"],
    [{ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: 1 }, "stream_options"],
    [{ model: "m", messages: [{ role: "user", content: "hi" }], stream_options: { include_usage: true } }, "stream_options"],
    [{ model: "m", messages: [{ role: "user", content: "hi" }], temperature: 3 }, "temperature"],
  ])("refuses %j as invalid (param %s)", (input, param) => {
    const rejected = validateChatRequest(input, known)
    expect(Either.isLeft(rejected) && rejected.left).toMatchObject({ _tag: "Invalid", param })
  })

  it("sends the model under its upstream name, and asks a stream for its usage", () => {
    const plain = Either.getOrThrow(validateChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }], n: 1 }, known))
    expect(JSON.parse(upstreamChatBody(plain, "org/M"))).toEqual({ model: "org/M", messages: [{ role: "user", content: "hi" }], n: 1 })
    const streamed = Either.getOrThrow(
      validateChatRequest({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { x: 1 } }, known),
    )
    expect(JSON.parse(upstreamChatBody(streamed, "m")).stream_options).toEqual({ x: 1, include_usage: true })
  })
})

const chunk = (content: string) => `data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}\n\n`
const usageChunk = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}\n\n'

const relayAll = (relay: SseRelay, pieces: ReadonlyArray<Uint8Array>) => {
  const decoder = new TextDecoder()
  let out = ""
  for (const piece of pieces) for (const bytes of relay.push(piece)) out += decoder.decode(bytes)
  for (const bytes of relay.end()) out += decoder.decode(bytes)
  return out
}

/** Splits bytes at random points, as TCP reads may, even inside a multi-byte character. */
const cutsOf = (bytes: Uint8Array) =>
  fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }), { maxLength: 12 }).map((cuts) => {
    const at = [0, ...cuts.filter((c) => c < bytes.length).sort((a, b) => a - b), bytes.length]
    return at.slice(1).map((end, i) => bytes.slice(at[i], end))
  })

describe("relaying a streamed answer", () => {
  const stream = chunk("Bonjour ") + chunk("à tous ✓") + usageChunk + "data: [DONE]\n\n"
  const bytes = new TextEncoder().encode(stream)

  it("passes every event on unchanged, however the bytes are split, when the caller asked for usage", () =>
    fc.assert(
      fc.property(cutsOf(bytes), (pieces) => {
        const relay = new SseRelay(true)
        expect(relayAll(relay, pieces)).toBe(stream)
        expect(relay.usage).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 })
      }),
    ))

  it("drops only the usage chunk, and still reads it, when the caller did not ask for it", () =>
    fc.assert(
      fc.property(cutsOf(bytes), (pieces) => {
        const relay = new SseRelay(false)
        expect(relayAll(relay, pieces)).toBe(chunk("Bonjour ") + chunk("à tous ✓") + "data: [DONE]\n\n")
        expect(relay.usage).toEqual({ prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 })
      }),
    ))

  it("passes on an unterminated last event when the upstream ends", () => {
    const relay = new SseRelay(false)
    expect(relayAll(relay, [new TextEncoder().encode(chunk("a") + "data: [DONE]")])).toBe(chunk("a") + "data: [DONE]")
  })
})
