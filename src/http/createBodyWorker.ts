import { parentPort, workerData } from "node:worker_threads"
import { type CreateBodyAnswer, type CreateBodyRequest, prepareCreateBody, type ServedModels } from "./createBody.js"

/** The thread that reads create bodies (see createBodyThread.ts). */
const port = parentPort
if (port === null) throw new Error("createBodyWorker runs as a worker thread")
const served = new Map((workerData as { readonly served: ServedModels }).served)

/** The rows' bytes are handed over, not copied. */
const transferOf = (answer: CreateBodyAnswer) =>
  answer.prepared._tag === "Batch" ? answer.prepared.encoded.groups.map((group) => group.bytes.buffer as ArrayBuffer) : []

port.on("message", ({ id, request }: { readonly id: number; readonly request: CreateBodyRequest }) => {
  let answer: CreateBodyAnswer
  try {
    answer = prepareCreateBody(request, served)
  } catch (error) {
    port.postMessage({ id, failed: error instanceof Error ? error.message : String(error) })
    return
  }
  port.postMessage({ id, answer }, transferOf(answer))
})
