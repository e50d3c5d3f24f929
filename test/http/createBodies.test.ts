import { Worker } from "node:worker_threads"
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import type { BatchEndpoint } from "../../src/domain/batch/endpoint.js"
import { createBodyThread } from "../../src/http/createBodies.js"
import { type CreateBodyRequest, prepareCreateBody } from "../../src/http/createBody.js"
import { typeScriptWorker } from "../../src/workerThread.js"

/*
 * The create thread (src/http/createBodies.ts): a real worker thread reads the bodies it is handed and
 * answers each what reading it where it arrived answers; a thread that cannot start, dies, or fails on
 * a body leaves that body and the next ones to the caller's thread.
 */
const served = new Map<string, ReadonlyArray<BatchEndpoint>>([["m", ["/v1/chat/completions", "/v1/responses"]]])
const batchId = (n: number) => `batch_${String(n).padStart(32, "0")}`

const body = (rows: number, tag: string) =>
  JSON.stringify({
    requests: Array.from({ length: rows }, (_, i) => ({ custom_id: `${tag}-${i}`, body: { model: "m", messages: [{ role: "user", content: `${tag} ${i} ✓` }] } })),
  })

/** A body as the create reads it: into shared memory. */
const request = (text: string, n: number, digest = false): CreateBodyRequest => {
  const bytes = Buffer.from(new SharedArrayBuffer(Buffer.byteLength(text)))
  bytes.write(text)
  return { bytes, batchId: batchId(n), accountModels: null, digest }
}

const realWorker = () =>
  typeScriptWorker(new URL("../../src/http/createBodies.ts", import.meta.url).href, "./createBodyWorker.ts", "./createBodyWorker.mjs", {
    workerData: { served: [...served] },
  })

const threads: Array<ReturnType<typeof createBodyThread>> = []
afterEach(async () => {
  for (const t of threads.splice(0)) await t.close()
})
const thread = (start: () => Worker) => {
  let posted = 0
  let answered = 0
  const made = createBodyThread(served, () => {
    const worker = start()
    worker.on("message", () => void answered++)
    const post = worker.postMessage.bind(worker)
    worker.postMessage = (message: unknown, transfer?: ReadonlyArray<any>) => {
      posted++
      post(message, transfer)
    }
    return worker
  })
  threads.push(made)
  return { ...made, posted: () => posted, answered: () => answered }
}

describe("the create thread", () => {
  it("reads the bodies handed to it, several at once, each answered what reading it here answers", async () => {
    const t = thread(realWorker)
    const texts = [body(2_000, "a"), body(10, "b"), JSON.stringify({ requests: [] }), "{not json", body(500, "c")]
    const answers = await Effect.runPromise(Effect.all(texts.map((text, i) => t.prepare(request(text, i, i === 0))), { concurrency: "unbounded" }))
    expect(t.posted()).toBe(texts.length)
    expect(t.answered()).toBe(texts.length)
    answers.forEach((answer, i) => expect(answer).toEqual(prepareCreateBody(request(texts[i]!, i, i === 0), served)))
    expect(answers[0]?.prepared._tag).toBe("Batch")
    expect(answers[2]?.prepared._tag).toBe("Refused")
    expect(answers[3]?.prepared).toMatchObject({ _tag: "Refused", message: "The request body is not valid JSON" })
  })

  it("leaves the bodies to the caller's thread when the thread cannot start or dies: the held body and every one after", async () => {
    const t = thread(() => new Worker("process.exit(3)", { eval: true }))
    const text = body(100, "d")
    const first = await Effect.runPromise(t.prepare(request(text, 1)))
    expect(first).toEqual(prepareCreateBody(request(text, 1), served))
    const second = await Effect.runPromise(t.prepare(request(text, 2)))
    expect(second).toEqual(prepareCreateBody(request(text, 2), served))
    expect(t.posted()).toBe(1)
    expect(t.answered()).toBe(0)
  })

  it("reads a body the thread failed on where it arrived", async () => {
    const failing = `require("node:worker_threads").parentPort.on("message", ({ id }) => require("node:worker_threads").parentPort.postMessage({ id, failed: "boom" }))`
    const t = thread(() => new Worker(failing, { eval: true }))
    const text = body(50, "e")
    expect(await Effect.runPromise(t.prepare(request(text, 3)))).toEqual(prepareCreateBody(request(text, 3), served))
    expect(t.posted()).toBe(1)
  })
})
