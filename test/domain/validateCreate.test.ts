import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CreateMessage as M, rowMessage } from "../../src/domain/batch/createMessages.js"
import { type CreateRejected, type ValidBatch, validateCreateBatch } from "../../src/domain/batch/validateCreate.js"
import { batchRequest, catalog, corruption, customId, validBatch } from "./arbitraries/createBatch.js"

const rejection = (input: unknown, limits?: Parameters<typeof validateCreateBatch>[2]): CreateRejected => {
  const result = validateCreateBatch(input, catalog, limits)
  if (Either.isRight(result)) throw new Error(`expected a rejection, got ${JSON.stringify(result.right)}`)
  return result.left
}

const accepted = (input: unknown, limits?: Parameters<typeof validateCreateBatch>[2]): ValidBatch => {
  const result = validateCreateBatch(input, catalog, limits)
  if (Either.isLeft(result)) throw new Error(`expected acceptance, got ${result.left.message}`)
  return result.right
}

const row = (custom_id: unknown, body: Record<string, unknown> = {}) => ({
  custom_id,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model: "glm-5.3-flash", messages: [{ role: "user", content: "hi" }], ...body },
})

describe("validateCreateBatch laws", () => {
  it("valid batches are accepted and keep every custom_id in order, with each body as sent", () => {
    fc.assert(
      fc.property(validBatch(), (input) => {
        const valid = accepted(input)
        expect(valid.requests.map((r) => r.custom_id)).toEqual(input.requests.map((r) => r["custom_id"]))
        valid.requests.forEach((r, i) => {
          const body = input.requests[i]?.["body"] as Record<string, unknown>
          expect(r.body).toBe(body)
          expect(r.model).toBe(body["model"])
        })
        expect(valid.metadata).toEqual(input["metadata"] ?? null)
      }),
    )
  })

  it("any single invalid row is named by its index and custom_id in the rejection", () => {
    const arb = validBatch().chain((input) =>
      fc.tuple(fc.constant(input), fc.nat({ max: input.requests.length - 1 }), corruption),
    )
    fc.assert(
      fc.property(arb, ([input, index, c]) => {
        const original = input.requests[index] as Record<string, unknown>
        const requests = input.requests.map((r, i) => (i === index ? c.apply(r) : r))
        const error = rejection({ ...input, requests })
        const id = c.keepsCustomId ? (original["custom_id"] as string) : undefined
        expect(error.message).toBe(rowMessage(index, id, c.detail))
        expect(error.param).toBe(`requests[${index}]${c.param}`)
      }),
      { numRuns: 1000 },
    )
  })

  it("the first faulty row in index order is the one reported", () => {
    const arb = validBatch()
      .filter((input) => input.requests.length >= 2)
      .chain((input) =>
        fc.tuple(
          fc.constant(input),
          fc.uniqueArray(fc.nat({ max: input.requests.length - 1 }), { minLength: 2, maxLength: 2 }),
          corruption,
          corruption,
        ),
      )
    fc.assert(
      fc.property(arb, ([input, [a, b], c1, c2]) => {
        const first = Math.min(a!, b!)
        const requests = input.requests.map((r, i) => (i === a ? c1.apply(r) : i === b ? c2.apply(r) : r))
        expect(rejection({ ...input, requests }).param).toMatch(new RegExp(`^requests\\[${first}\\]`))
      }),
    )
  })

  it("a repeated custom_id is rejected at its second occurrence, naming both indexes", () => {
    const arb = validBatch()
      .filter((input) => input.requests.length >= 2)
      .chain((input) => {
        const n = input.requests.length
        return fc.tuple(fc.constant(input), fc.nat({ max: n - 2 }).chain((i) => fc.tuple(fc.constant(i), fc.integer({ min: i + 1, max: n - 1 }))))
      })
    fc.assert(
      fc.property(arb, ([input, [first, second]]) => {
        const id = input.requests[first]?.["custom_id"] as string
        const requests = input.requests.map((r, i) => (i === second ? { ...r, custom_id: id } : r))
        const error = rejection({ ...input, requests })
        expect(error.message).toBe(rowMessage(second, id, M.customIdRepeated(first)))
        expect(error.param).toBe(`requests[${second}].custom_id`)
      }),
    )
  })

  it("the request count is enforced at its exact boundary", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), (limit, count) => {
        const input = { requests: Array.from({ length: count }, (_, i) => row(`q-${i}`)) }
        const result = validateCreateBatch(input, catalog, { maxRequests: limit })
        if (count <= limit) expect(Either.isRight(result)).toBe(true)
        else expect(Either.getLeft(result).pipe((o) => o._tag === "Some" && o.value.message)).toBe(M.tooManyRequests(count, limit))
      }),
    )
  })

  it("custom_id length is enforced at its exact boundary", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 600 }), (length) => {
        const result = validateCreateBatch({ requests: [row("x".repeat(length))] }, catalog)
        expect(Either.isRight(result)).toBe(length <= 512)
      }),
    )
  })

  it("metadata limits are enforced at their exact boundaries", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 0, max: 520 }),
        (pairs, keyLength, valueLength) => {
          const metadata = Object.fromEntries(
            Array.from({ length: pairs }, (_, i) => [`${i}`.padEnd(keyLength, "k"), "v".repeat(valueLength)]),
          )
          const result = validateCreateBatch({ requests: [row("q")], metadata }, catalog)
          const withinLimits = pairs <= 16 && (pairs === 0 || (keyLength <= 64 && valueLength <= 512))
          expect(Either.isRight(result)).toBe(withinLimits)
        },
      ),
    )
  })

  it("the model check asks the catalog and reports unavailable and unknown models alike", () => {
    fc.assert(
      fc.property(batchRequest(customId), fc.string({ minLength: 1 }), (request, model) => {
        fc.pre(model !== "auto" && !model.startsWith("auto-"))
        const asked: Array<string> = []
        const none = { isAvailable: (m: string) => (asked.push(m), false) }
        const body = { ...(request["body"] as object), model }
        const result = validateCreateBatch({ requests: [{ ...request, body }] }, none)
        expect(asked).toEqual([model])
        expect(Either.getLeft(result).pipe((o) => o._tag === "Some" && o.value.message)).toBe(
          rowMessage(0, request["custom_id"] as string, M.modelNotFound(model)),
        )
      }),
    )
  })
})

describe("validateCreateBatch messages", () => {
  it("accepts the seed's create example", () => {
    const valid = accepted({
      requests: [
        row("q-1"),
        row("q-2", { model: "qwen3.6-35b", messages: [{ role: "user", content: "Translate" }], max_tokens: 50 }),
      ],
      metadata: { project: "eval-42" },
    })
    expect(valid).toEqual({
      endpoint: "/v1/chat/completions",
      requests: [
        { custom_id: "q-1", model: "glm-5.3-flash", body: row("q-1").body },
        {
          custom_id: "q-2",
          model: "qwen3.6-35b",
          body: { model: "qwen3.6-35b", messages: [{ role: "user", content: "Translate" }], max_tokens: 50 },
        },
      ],
      metadata: { project: "eval-42" },
      priority: "standard",
    })
  })

  it("takes a priority as sent, standard when absent or null, and refuses anything else naming 'priority'", () => {
    for (const priority of ["high", "standard", "background"] as const) expect(accepted({ requests: [row("q")], priority }).priority).toBe(priority)
    expect(accepted({ requests: [row("q")] }).priority).toBe("standard")
    expect(accepted({ requests: [row("q")], priority: null }).priority).toBe("standard")
    for (const sent of ["urgent", "High", "", 0, false, ["high"], { level: "high" }]) {
      const error = rejection({ requests: [row("q")], priority: sent })
      expect(error.message).toBe(`'priority' must be one of high, standard, background, got ${JSON.stringify(sent)}`)
      expect(error.param).toBe("priority")
    }
  })

  it("reports the seed's example error verbatim", () => {
    const error = rejection({ requests: [row("q-1"), row("q-2", { model: "no-such-model" })] })
    expect(error._tag).toBe("CreateRejected")
    expect(error.message).toBe("requests[1] (custom_id 'q-2'): Model 'no-such-model' not found")
    expect(error.param).toBe("requests[1].body.model")
  })

  it("accepts requests without method and url, ignores completion_window and unknown fields", () => {
    const valid = accepted({
      requests: [{ custom_id: "a", body: row("a").body }],
      completion_window: "7d",
      input_file_id: "file-1",
      metadata: null,
    })
    expect(valid.requests).toHaveLength(1)
    expect(valid.metadata).toBeNull()
  })

  it.each([
    [null, null],
    ["text", null],
    [[row("a")], null],
    [{}, "requests"],
    [{ requests: "many" }, "requests"],
    [{ requests: { 0: row("a") } }, "requests"],
  ])("rejects %j as not a batch", (input, param) => {
    const error = rejection(input)
    expect(error.message).toBe(M.notABatch)
    expect(error.message).toBe("The request body is not a batch: expected a JSON object with a 'requests' array")
    expect(error.param).toBe(param)
  })

  it("rejects an empty batch", () => {
    expect(rejection({ requests: [] }).message).toBe("The batch holds no requests: 'requests' must hold at least one")
  })

  it("rejects 50,001 requests with the count and the limit, before looking at any row", () => {
    const requests = new Array(50_001).fill(null)
    const error = rejection({ requests })
    expect(error.message).toBe(
      "The batch holds 50001 requests, more than the limit of 50000; split it into several batches",
    )
    expect(error.param).toBe("requests")
  })

  it.each([
    [{ custom_id: "q-1", body: { messages: [{ role: "user", content: "hi" }] } }, "requests[0] (custom_id 'q-1'): body.model must be a string naming a model, got nothing"],
    [row("q-1", { model: "auto" }), "requests[0] (custom_id 'q-1'): Model 'auto' is an auto model, which cannot be used in a batch; name a specific model"],
    [row("q-1", { model: "auto-premium" }), "requests[0] (custom_id 'q-1'): Model 'auto-premium' is an auto model, which cannot be used in a batch; name a specific model"],
    [row("q-1", { stream: true }), "requests[0] (custom_id 'q-1'): body.stream must be false or absent: batch requests cannot stream, got true"],
    [row("q-1", { messages: [] }), "requests[0] (custom_id 'q-1'): body.messages must be a non-empty array of messages, got an array"],
    [row("q-1", { messages: [{ role: "user", content: "hi" }, { role: 1 }] }), "requests[0] (custom_id 'q-1'): body.messages[1].role must be one of system, developer, user, assistant, tool, function, got 1"],
    [row("q-4", { temperature: "hot" }), "requests[0] (custom_id 'q-4'): body.temperature must be a number from 0 to 2, got \"hot\""],
    [{ ...row("q-1"), method: "GET" }, "requests[0] (custom_id 'q-1'): 'method' must be 'POST', the only method a batch accepts"],
    [{ ...row("q-1"), url: "/v1/completions" }, "requests[0] (custom_id 'q-1'): 'url' must be one of '/v1/chat/completions', '/v1/embeddings', '/v1/responses', the endpoints a batch can call"],
    [{ custom_id: "q-1" }, "requests[0] (custom_id 'q-1'): 'body' must be a chat-completion request object"],
    [{ body: row("a").body }, "requests[0]: 'custom_id' is required"],
    [row(12), "requests[0]: 'custom_id' must be a string"],
    [row(""), "requests[0]: 'custom_id' must not be empty"],
    [row("x".repeat(513)), "requests[0]: 'custom_id' is 513 characters, more than the limit of 512"],
    ["q-1", "requests[0]: must be an object with 'custom_id' and 'body'"],
  ])("rejects row %j with its message", (bad, message) => {
    expect(rejection({ requests: [bad] }).message).toBe(message)
  })

  it("names both indexes of a repeated custom_id", () => {
    const error = rejection({ requests: [row("a"), row("b"), row("a")] })
    expect(error.message).toBe(
      "requests[2] (custom_id 'a'): 'custom_id' repeats the one of requests[0]; custom_ids must be unique within the batch",
    )
    expect(error.param).toBe("requests[2].custom_id")
  })

  it.each([
    [["a", "b"], "'metadata' must be an object of string key-value pairs", "metadata"],
    ["tag", "'metadata' must be an object of string key-value pairs", "metadata"],
    [Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])), "'metadata' has 17 pairs, more than the limit of 16", "metadata"],
    [{ ["k".repeat(65)]: "v" }, `'metadata' key '${"k".repeat(65)}' is 65 characters, more than the limit of 64`, "metadata"],
    [{ project: 42 }, "'metadata' value for key 'project' must be a string", "metadata.project"],
    [{ project: "v".repeat(513) }, "'metadata' value for key 'project' is 513 characters, more than the limit of 512", "metadata.project"],
  ])("rejects metadata %j", (metadata, message, param) => {
    const error = rejection({ requests: [row("a")], metadata })
    expect(error.message).toBe(message)
    expect(error.param).toBe(param)
  })

  it("accepts metadata at every limit exactly", () => {
    const metadata = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(64, "k"), "v".repeat(512)]))
    expect(accepted({ requests: [row("a")], metadata }).metadata).toEqual(metadata)
  })
})

describe("validateCreateBatch at the real size", () => {
  // Its speed is measured by `npm run bench`; a test only checks that the largest batch is accepted whole.
  it("accepts 50,000 rows and keeps them all", () => {
    const requests = Array.from({ length: 50_000 }, (_, i) => row(`request-${i}`, { max_tokens: 64 }))
    const result = validateCreateBatch({ requests }, catalog)
    expect(Either.isRight(result) && result.right.requests.length).toBe(50_000)
  })
})
