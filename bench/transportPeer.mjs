// The actors' side of B19: answers each call it is sent with an object the size of a batch object,
// over a worker thread's port or a forked process's IPC channel, and reports its own thread's CPU.
import { readFileSync } from "node:fs"
import { isMainThread, parentPort } from "node:worker_threads"

/** User plus system CPU of the calling thread, ms (clock ticks of 10 ms). */
const threadCpuMs = () => {
  const fields = readFileSync("/proc/thread-self/stat", "utf8").split(") ")[1].split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

const answer = (i) => ({
  id: `batch_${i}`,
  object: "batch",
  endpoint: "/v1/chat/completions",
  status: "in_progress",
  model: "glm-5.3-flash",
  created_at: 1_764_720_000 + i,
  expires_at: 1_764_806_400 + i,
  request_counts: { total: 20_000, completed: i % 20_000, failed: 0, cancelled: 0, expired: 0, queued: 20_000 - (i % 20_000), running: 64 },
  usage: { prompt_tokens: 123_456, completion_tokens: 654_321, total_tokens: 777_777 },
  metadata: { project: "evals", run: "nightly", owner: "team-a", note: "x".repeat(900) },
  waiting_on: null,
})

const port = isMainThread ? process : parentPort
const send = (message) => (isMainThread ? process.send(message) : parentPort.postMessage(message))
let started = 0
port.on("message", (message) => {
  if (message.type === "call") send({ type: "answer", id: message.id, value: answer(message.id) })
  else if (message.type === "start") {
    started = threadCpuMs()
    send({ type: "started" })
  } else if (message.type === "stop") send({ type: "stopped", cpuMs: threadCpuMs() - started })
  else if (message.type === "exit") process.exit(0)
})
