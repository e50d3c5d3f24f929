import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordingUpstream {
  /** Base URL ending in /v1, to name in the catalog instead of the target's. */
  readonly url: string
  /** How many chat-completion requests whose last user message was `text` reached the upstream. */
  calls(text: string): number
  /** Every chat completion that reached the upstream, in the order it arrived, by its last user message and wall-clock time (ms). */
  arrivals(): ReadonlyArray<{ readonly text: string; readonly at: number }>
  /**
   * The most chat completions open at once, each from its arrival until it is answered or its client has
   * gone: a request of a process that crashed ends with it, though the model server may finish it.
   */
  maxInFlight(): number
  /** When the most were first open at once, and which (their last user messages, or the path), to name them in a failure. */
  peak(): { readonly at: number; readonly open: ReadonlyArray<string> } | undefined
  close(): Promise<void>
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("")
      : ""

/** The last user message's text, as the simulator reads it: the request's identity in the upstream's log. */
const lastUserText = (body: Buffer): string | undefined => {
  try {
    const messages = (JSON.parse(body.toString("utf8")) as { messages?: Array<{ role?: string; content?: unknown }> }).messages ?? []
    return messages.filter((m) => m.role === "user").map((m) => textOf(m.content)).pop()
  } catch {
    return undefined
  }
}

/**
 * The upstream's own log of what it was asked: a proxy on loopback in front of `target` (a model server's
 * base URL without /v1) that counts each chat completion by its last user message and passes every
 * request and answer through unchanged. A client that goes away takes its request at the target with it.
 */
export const startRecordingUpstream = async (target: string): Promise<RecordingUpstream> => {
  const calls = new Map<string, number>()
  const arrived: Array<{ readonly text: string; readonly at: number }> = []
  const open = new Set<{ readonly text: string }>()
  let peak: { readonly at: number; readonly open: ReadonlyArray<string> } | undefined
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks)
      if (req.method === "POST" && req.url?.startsWith("/v1/chat/completions")) {
        const text = lastUserText(body)
        if (text !== undefined) {
          calls.set(text, (calls.get(text) ?? 0) + 1)
          arrived.push({ text, at: Date.now() })
        }
        const call = { text: text ?? req.url }
        open.add(call)
        if (open.size > (peak?.open.length ?? 0)) peak = { at: Date.now(), open: [...open].map((c) => c.text) }
        res.once("close", () => open.delete(call))
      }
      const onward = request(`${target}${req.url ?? "/"}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      onward.on("error", () => res.destroy())
      res.on("close", () => {
        if (!res.writableFinished) onward.destroy()
      })
      onward.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls: (text) => calls.get(text) ?? 0,
    arrivals: () => arrived,
    maxInFlight: () => peak?.open.length ?? 0,
    peak: () => peak,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
