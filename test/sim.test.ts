import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simOptionsFromArgs } from "../src/sim/CliOptions.js"
import { simDirective } from "../src/sim/Directives.js"
import { startSimulator, type Simulator } from "../src/sim/Simulator.js"
import type { SimulatorOptions } from "../src/sim/SimulatorOptions.js"

const MODEL = "glm-5.3-flash"
const repoRoot = fileURLToPath(new URL("..", import.meta.url))

const ask = (text: string, extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  messages: [{ role: "user", content: text }],
  ...extra,
})

const post = (sim: Simulator, body: unknown, signal?: AbortSignal): Promise<Response> =>
  fetch(`${sim.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  })

// Answers are checked field by field, so untyped JSON is what the assertions want.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (res: Response | Promise<Response>): Promise<any> => (await res).json()

/** Polls a condition; a wait for an event, not a timing assertion. */
const until = async (condition: () => boolean | Promise<boolean>, what: string): Promise<void> => {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`gave up waiting for ${what}`)
}

const gauge = (metrics: string, name: string, model: string): number => {
  const line = metrics.split("\n").find((l) => l.startsWith(`${name}{model_name="${model}"} `))
  if (line === undefined) throw new Error(`no ${name} for ${model} in:\n${metrics}`)
  return Number(line.slice(line.lastIndexOf(" ") + 1))
}

const withSim = (options: SimulatorOptions = {}) => {
  const handle: { sim: Simulator } = { sim: undefined as unknown as Simulator }
  beforeAll(async () => {
    handle.sim = await startSimulator(options)
  })
  afterAll(() => handle.sim.close())
  return handle
}

describe("simulated model server: answers", () => {
  const h = withSim({ faults: { retryAfterSeconds: 7 } })

  it("answers a chat.completion with usage", async () => {
    const res = await post(h.sim, {
      model: MODEL,
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "What is 2+2?" },
      ],
    })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/json")
    const body = await json(res)
    expect(body).toMatchObject({
      object: "chat.completion",
      model: MODEL,
      choices: [
        { index: 0, message: { role: "assistant", content: "Simulated answer to: What is 2+2?" }, finish_reason: "stop" },
      ],
    })
    expect(body.id).toMatch(/^chatcmpl-/)
    expect(Number.isInteger(body.created)).toBe(true)
    const content: string = body.choices[0].message.content
    expect(body.usage).toEqual({
      prompt_tokens: Math.ceil(("You are terse.".length + "What is 2+2?".length) / 4),
      completion_tokens: Math.ceil(content.length / 4),
      total_tokens: Math.ceil(26 / 4) + Math.ceil(content.length / 4),
    })
  })

  it("POST /tokenize counts a chat request's prompt tokens as its completion's usage does, and a plain prompt's", async () => {
    const messages = [
      { role: "system", content: "You are terse." },
      { role: "user", content: [{ type: "text", text: "What is 2+2, and why?" }] },
    ]
    const root = h.sim.url.replace(/\/v1$/, "")
    const tokenize = (body: unknown) => fetch(`${root}/tokenize`, { method: "POST", body: JSON.stringify(body) })
    const counted = await tokenize({ model: MODEL, messages })
    expect(counted.status).toBe(200)
    const answer = await json(counted)
    const usage = (await json(await post(h.sim, { model: MODEL, messages }))).usage
    expect(answer.count).toBe(usage.prompt_tokens)
    expect(answer.tokens).toHaveLength(answer.count)
    expect(answer.max_model_len).toBeGreaterThan(0)
    expect((await json(await tokenize({ model: MODEL, prompt: "12345678" }))).count).toBe(2)
    expect((await tokenize({ model: "no-such-model", messages })).status).toBe(404)
    expect((await tokenize({ model: MODEL })).status).toBe(400)
  })

  it("quotes at most 80 characters of the last user message and counts array content parts", async () => {
    const long = "x".repeat(200)
    const res = await post(h.sim, {
      model: MODEL,
      messages: [
        { role: "user", content: "first" },
        { role: "assistant", content: "ok" },
        { role: "user", content: [{ type: "text", text: long }] },
      ],
    })
    const body = await json(res)
    expect(body.choices[0].message.content).toBe(`Simulated answer to: ${"x".repeat(80)}`)
    expect(body.usage.prompt_tokens).toBe(Math.ceil(207 / 4))
  })

  it("cuts the answer at max_tokens with finish_reason length", async () => {
    const body = await json(post(h.sim, ask("Tell me a long story", { max_tokens: 2 })))
    expect(body.choices[0].finish_reason).toBe("length")
    expect(body.choices[0].message.content).toBe("Simulated answer to: Tell me a long story".slice(0, 8))
    expect(body.usage.completion_tokens).toBe(2)
  })

  it("404s an unknown model with the OpenAI envelope", async () => {
    const res = await post(h.sim, { ...ask("hi"), model: "x" })
    expect(res.status).toBe(404)
    expect(await json(res)).toEqual({
      error: {
        message: "The model 'x' does not exist",
        type: "invalid_request_error",
        param: "model",
        code: "model_not_found",
      },
    })
  })

  it("400s invalid bodies", async () => {
    const invalid: unknown[] = [
      "{not json",
      "[]",
      { messages: [{ role: "user", content: "hi" }] },
      { model: MODEL },
      { model: MODEL, messages: [] },
      { model: MODEL, messages: ["hi"] },
      ask("hi", { max_tokens: -1 }),
    ]
    for (const body of invalid) {
      const res = await post(h.sim, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      const envelope = await json(res)
      expect(envelope.error.type).toBe("invalid_request_error")
      expect(typeof envelope.error.message).toBe("string")
    }
  })

  it("serves /v1/models, /health and 404s unknown routes", async () => {
    const models = await json(fetch(`${h.sim.url}/models`))
    expect(models.object).toBe("list")
    expect(models.data.map((m: { id: string }) => m.id)).toEqual(["glm-5.3-flash", "qwen3.6-35b"])
    expect((await fetch(`${h.sim.url.replace(/\/v1$/, "")}/health`)).status).toBe(200)
    const missing = await fetch(`${h.sim.url}/nope`)
    expect(missing.status).toBe(404)
    expect((await json(missing)).error.type).toBe("invalid_request_error")
  })

  it("streams chat.completion.chunk events ending with [DONE]", async () => {
    const text = "Stream me something please, a little longer than one chunk"
    const plain = await json(post(h.sim, ask(text)))
    const res = await post(h.sim, ask(text, { stream: true, stream_options: { include_usage: true } }))
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/event-stream")
    const events = (await res.text()).split("\n\n").filter((e) => e !== "")
    for (const event of events) expect(event.startsWith("data: ")).toBe(true)
    expect(events.at(-1)).toBe("data: [DONE]")
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice("data: ".length)))
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: "chat.completion.chunk", model: MODEL })
    expect(chunks[0].choices[0].delta.role).toBe("assistant")
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
    expect(content).toBe(plain.choices[0].message.content)
    expect(chunks.at(-2).choices[0].finish_reason).toBe("stop")
    expect(chunks.at(-1).usage).toEqual(plain.usage)
  })

  it("counts requests in stats()", () => {
    const stats = h.sim.stats()
    expect(stats.received).toBeGreaterThanOrEqual(12)
    expect(stats.answered[400]).toBe(7)
    expect(stats.answered[404]).toBe(1)
    expect(stats.inFlight).toBe(0)
    expect(stats.waiting).toBe(0)
  })
})

describe("simulated model server: directives", () => {
  const h = withSim({ faults: { retryAfterSeconds: 7 } })

  it("[sim:status=N] answers that status with an error envelope", async () => {
    for (const status of [400, 403, 404, 422, 429, 500, 503]) {
      const res = await post(h.sim, ask(`row ${simDirective.status(status)}`))
      expect(res.status).toBe(status)
      const body = await json(res)
      expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "type"])
      expect(res.headers.get("retry-after")).toBe(status === 429 ? "7" : null)
    }
  })

  it("[sim:fail=N:STATUS] fails the first N identical requests, counted per content", async () => {
    const a = ask(`row A ${simDirective.fail(2, 503)}`)
    const b = ask(`row B ${simDirective.fail(1, 429)}`)
    const statuses: number[] = []
    for (const body of [a, b, a, b, a, a]) statuses.push((await post(h.sim, body)).status)
    expect(statuses).toEqual([503, 429, 503, 200, 200, 200])
  })

  it("[sim:hang] never answers and holds its slot until the client gives up", async () => {
    const abort = new AbortController()
    const pending = post(h.sim, ask(`row ${simDirective.hang}`), abort.signal)
    await until(() => h.sim.stats().hung === 1, "the hang")
    expect(h.sim.stats().inFlight).toBe(1)
    abort.abort()
    await expect(pending).rejects.toThrow()
    await until(() => h.sim.stats().inFlight === 0, "the hung slot to be released")
  })

  it("[sim:reset] destroys the connection", async () => {
    await expect(post(h.sim, ask(`row ${simDirective.reset}`))).rejects.toThrow(TypeError)
    expect(h.sim.stats().reset).toBe(1)
    expect((await post(h.sim, ask("after the reset"))).status).toBe(200)
  })

  it("[sim:truncate] sends the status and a partial JSON body, then ends the socket", async () => {
    const res = await post(h.sim, ask(`row ${simDirective.truncate}`))
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text.startsWith('{"id":"chatcmpl-')).toBe(true)
    expect(() => JSON.parse(text)).toThrow()
    expect(h.sim.stats().truncated).toBe(1)
  })

  it("[sim:latency=MS] holds the request in flight before answering", async () => {
    const pending = post(h.sim, ask(`row ${simDirective.latency(300)}`))
    await until(() => h.sim.stats().inFlight === 1, "the slow request to be in flight")
    expect((await pending).status).toBe(200)
    expect(h.sim.stats().inFlight).toBe(0)
  })

  it("[sim:tokens=N] sets the completion length, still cut by max_tokens", async () => {
    const full = await json(post(h.sim, ask(`row ${simDirective.tokens(50)}`)))
    expect(full.usage.completion_tokens).toBe(50)
    expect(full.choices[0].message.content).toHaveLength(200)
    expect(full.choices[0].finish_reason).toBe("stop")
    const cut = await json(post(h.sim, ask(`row ${simDirective.tokens(50)}`, { max_tokens: 10 })))
    expect(cut.usage.completion_tokens).toBe(10)
    expect(cut.choices[0].message.content).toHaveLength(40)
    expect(cut.choices[0].finish_reason).toBe("length")
  })

  it("400s a malformed or unknown directive", async () => {
    for (const tag of ["[sim:status=200]", "[sim:fail=x:503]", "[sim:explode]"]) {
      const res = await post(h.sim, ask(`row ${tag}`))
      expect(res.status).toBe(400)
      expect((await json(res)).error.message).toContain("sim directive")
    }
  })
})

describe("simulated model server: concurrency", () => {
  const h = withSim({ concurrency: 4, latencyMs: 30 })

  it("never runs more than the cap and reports the queue in /metrics", async () => {
    const models = ["glm-5.3-flash", "qwen3.6-35b"]
    let done = false
    const all = Promise.all(
      Array.from({ length: 50 }, (_, i) => post(h.sim, { ...ask(`row ${i}`), model: models[i % 2] })),
    ).finally(() => {
      done = true
    })
    let maxWaiting = 0
    let maxRunning = 0
    let maxStatsWaiting = 0
    while (!done) {
      const metrics = await (await fetch(h.sim.url.replace(/\/v1$/, "/metrics"))).text()
      const waiting = models.reduce((sum, m) => sum + gauge(metrics, "vllm:num_requests_waiting", m), 0)
      const running = models.reduce((sum, m) => sum + gauge(metrics, "vllm:num_requests_running", m), 0)
      maxWaiting = Math.max(maxWaiting, waiting)
      maxRunning = Math.max(maxRunning, running)
      maxStatsWaiting = Math.max(maxStatsWaiting, h.sim.stats().waiting)
    }
    const responses = await all
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200))
    expect(maxWaiting).toBeGreaterThan(0)
    expect(maxStatsWaiting).toBeGreaterThan(0)
    expect(maxRunning).toBeLessThanOrEqual(4)
    const stats = h.sim.stats()
    expect(stats.maxInFlight).toBe(4)
    expect(stats.answered[200]).toBe(50)
    expect(stats).toMatchObject({ inFlight: 0, waiting: 0 })
    const after = await (await fetch(h.sim.url.replace(/\/v1$/, "/metrics"))).text()
    expect(gauge(after, "vllm:num_requests_waiting", MODEL)).toBe(0)
    expect(gauge(after, "vllm:num_requests_running", MODEL)).toBe(0)
    expect(after).toContain(`vllm:request_success_total{model_name="${MODEL}"} 25`)
  })
})

describe("simulated model server: queue", () => {
  const h = withSim({ concurrency: 1 })

  it("serves waiters in FIFO order and drops those whose client gave up", async () => {
    const hang = new AbortController()
    const hanging = post(h.sim, ask(`holder ${simDirective.hang}`), hang.signal).catch(() => "aborted")
    await until(() => h.sim.stats().hung === 1, "the hang to hold the only slot")

    const order: string[] = []
    const enqueue = async (name: string, signal?: AbortSignal) => {
      const waitingBefore = h.sim.stats().waiting
      const pending = post(h.sim, ask(`${name} ${simDirective.latency(20)}`), signal).then(
        (res) => {
          order.push(name)
          return res.status
        },
        () => "aborted",
      )
      await until(() => h.sim.stats().waiting === waitingBefore + 1, `${name} to queue`)
      return { pending }
    }
    const first = await enqueue("first")
    const quitter = new AbortController()
    const quitting = await enqueue("quitter", quitter.signal)
    const last = await enqueue("last")
    quitter.abort()
    expect(await quitting.pending).toBe("aborted")
    await until(() => h.sim.stats().waiting === 2, "the quitter to leave the queue")

    hang.abort()
    expect(await hanging).toBe("aborted")
    expect(await first.pending).toBe(200)
    expect(await last.pending).toBe(200)
    expect(order).toEqual(["first", "last"])
    expect(h.sim.stats()).toMatchObject({ inFlight: 0, waiting: 0, maxInFlight: 1 })
  })
})

describe("simulated model server: seeded faults", () => {
  const faults = { rate429: 0.15, rate500: 0.1, rate503: 0.1, hangRate: 0.05, resetRate: 0.1, truncateRate: 0.1 }

  const outcomes = async (seed: number): Promise<string[]> => {
    const sim = await startSimulator({ seed, faults })
    try {
      const seen: string[] = []
      for (let i = 0; i < 40; i++) {
        try {
          // Long enough that a loaded machine never makes a normal answer look like a hang.
          const res = await post(sim, ask(`row ${i}`), AbortSignal.timeout(1_500))
          const text = await res.text()
          let parsed = true
          try {
            JSON.parse(text)
          } catch {
            parsed = false
          }
          seen.push(parsed ? String(res.status) : "truncated")
        } catch (error) {
          seen.push(error instanceof DOMException && error.name === "TimeoutError" ? "hang" : "reset")
        }
      }
      return seen
    } finally {
      await sim.close()
    }
  }

  it("same seed, same sequence of outcomes", async () => {
    const first = await outcomes(42)
    const second = await outcomes(42)
    expect(second).toEqual(first)
    expect(new Set(first).size).toBeGreaterThanOrEqual(4)
    expect(first).toContain("200")
    expect(await outcomes(43)).not.toEqual(first)
  })
})

describe("simulator process (src/sim/main.ts)", () => {
  it("prints its URL, serves a completion and exits on SIGTERM", async () => {
    // tsx itself rather than npx: npx does not forward SIGTERM to the process it starts.
    const child = spawn(`${repoRoot}node_modules/.bin/tsx`, ["src/sim/main.ts"], {
      cwd: repoRoot,
      env: { ...process.env, SIM_PORT: "0", SIM_MODELS: "m1,m2", SIM_LATENCY_MS: "1" },
      stdio: ["ignore", "pipe", "inherit"],
    })
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      const lines = createInterface({ input: child.stdout })
      const url = await new Promise<string>((resolve, reject) => {
        lines.on("line", (line) => {
          const match = /^sim listening on (http:\/\/\S+\/v1)$/.exec(line)
          if (match?.[1] !== undefined) resolve(match[1])
        })
        child.once("exit", (code) => reject(new Error(`sim exited early with ${code}`)))
      })
      const res = await fetch(`${url}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hello" }] }),
      })
      expect(res.status).toBe(200)
      expect((await json(res)).choices[0].message.content).toBe("Simulated answer to: hello")
      child.kill("SIGTERM")
      expect(await exited).toBe(0)
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
    }
  })
})

describe("simulator CLI options", () => {
  it("reads flags over SIM_* environment variables", () => {
    const options = simOptionsFromArgs(["--latency-ms", "5", "--models", "a, b"], {
      SIM_LATENCY_MS: "100",
      SIM_SEED: "9",
      SIM_CONCURRENCY: "8",
      SIM_FAULTS: '{"rate429":0.5,"retryAfterSeconds":3}',
    })
    expect(options).toEqual({
      latencyMs: 5,
      models: ["a", "b"],
      seed: 9,
      concurrency: 8,
      faults: { rate429: 0.5, retryAfterSeconds: 3 },
    })
  })

  it("rejects malformed values", () => {
    expect(() => simOptionsFromArgs([], { SIM_FAULTS: '{"rate42":0.5}' })).toThrow(/unknown key/)
    expect(() => simOptionsFromArgs(["--port", "abc"], {})).toThrow(/not a number/)
    expect(() => simOptionsFromArgs(["--bogus", "1"], {})).toThrow()
  })
})
