import type { Worker } from "node:worker_threads"
import { Effect } from "effect"
import { ModelCatalog } from "../config/ModelCatalog.js"
import type { BatchEndpoint } from "../domain/batch/endpoint.js"
import { typeScriptWorker } from "../workerThread.js"
import { type CreateBodyAnswer, type CreateBodyRequest, prepareCreateBody } from "./createBody.js"

/**
 * Bodies from this size on are read on the create thread; smaller ones where they arrive, where
 * reading them costs less than handing them over. A 20,000-row body of 3 MiB took one turn of 60 to
 * 98 ms on the dispatch thread (parsed, checked, its rows serialized).
 */
export const ON_THREAD_BYTES = 64 * 1024

type FromWorker = { readonly id: number; readonly answer: CreateBodyAnswer } | { readonly id: number; readonly failed: string }

/**
 * Reads create bodies (`prepareCreateBody`) on a worker thread of its own, so the thread that runs the
 * actors and the projector does not parse, check and serialize a batch of up to 32 MiB in one turn.
 * The thread starts with the first body it is given. The body is shared with it, not copied: should the
 * thread fail to start or die, the bodies it held, and every one after, are read on the caller's
 * thread, as they were before it.
 */
export const createBodyThread = (
  served: ReadonlyMap<string, ReadonlyArray<BatchEndpoint>>,
  startWorker: () => Worker = () =>
    typeScriptWorker(import.meta.url, "./createBodyWorker.ts", "./createBodyWorker.mjs", { workerData: { served: [...served] } }),
) => {
  let worker: Worker | undefined
  let failed = false
  let nextId = 0
  const waiting = new Map<number, { readonly request: CreateBodyRequest; readonly answer: (a: CreateBodyAnswer) => void }>()
  const inline = (request: CreateBodyRequest) => prepareCreateBody(request, served)
  const stopped = (from: Worker) => {
    if (worker !== from) return
    worker = undefined
    failed = true
    const held = [...waiting.values()]
    waiting.clear()
    for (const { request, answer } of held) answer(inline(request))
  }
  const start = () => {
    const started = startWorker()
    started.unref()
    started.on("message", (message: FromWorker) => {
      const held = waiting.get(message.id)
      if (held === undefined) return
      waiting.delete(message.id)
      // A body the thread could not read (it threw) is read here, where the same error is answered as before.
      held.answer("answer" in message ? message.answer : inline(held.request))
    })
    started.on("error", () => stopped(started))
    started.on("exit", () => stopped(started))
    return started
  }
  return {
    prepare: (request: CreateBodyRequest): Effect.Effect<CreateBodyAnswer> =>
      failed
        ? Effect.sync(() => inline(request))
        : Effect.async<CreateBodyAnswer>((resume) => {
            worker ??= start()
            const id = nextId++
            waiting.set(id, { request, answer: (a) => resume(Effect.succeed(a)) })
            worker.postMessage({ id, request })
            // A create that no longer waits (its client gone) leaves the answer unread.
            return Effect.sync(() => void waiting.delete(id))
          }),
    close: async () => {
      const running = worker
      worker = undefined
      await running?.terminate()
    },
  }
}

/** A create's body read: on the create thread from ON_THREAD_BYTES on, where it arrived below that. */
export class CreateBodies extends Effect.Service<CreateBodies>()("Http/CreateBodies", {
  scoped: Effect.gen(function* () {
    const catalog = yield* ModelCatalog
    const served = new Map([...catalog].map(([id, model]) => [id, model.endpoints] as const))
    const thread = yield* Effect.acquireRelease(
      Effect.sync(() => createBodyThread(served)),
      (t) => Effect.promise(t.close),
    )
    return {
      prepare: (request: CreateBodyRequest): Effect.Effect<CreateBodyAnswer> =>
        request.bytes.byteLength < ON_THREAD_BYTES ? Effect.sync(() => prepareCreateBody(request, served)) : thread.prepare(request),
    } as const
  }),
}) {}
