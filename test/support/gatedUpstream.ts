import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A model server of the test's own: it answers each chat request with its last message's text, and
 * holds those whose text starts with "hold" until the test lets them go, so a test knows which request
 * runs and which waits. It records what arrived, the bodies, and the most requests it held at once.
 */
export const startGatedUpstream = async () => {
  const arrived: Array<string> = []
  const bodies: Array<Record<string, unknown>> = []
  let open = 0
  let mostOpen = 0
  const held = new Map<string, ServerResponse>()
  const answer = (res: ServerResponse, text: string) =>
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion",
        created: 1,
        model: "gated-upstream",
        choices: [{ index: 0, message: { role: "assistant", content: `echo: ${text}` }, finish_reason: "stop" }],
        usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
      }),
    )
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      // The model's load probes (GET /metrics) get nothing to read.
      if (req.method !== "POST") return void res.writeHead(404).end()
      const body = JSON.parse(Buffer.concat(chunks).toString())
      const text = String(body.messages[body.messages.length - 1].content)
      arrived.push(text)
      bodies.push(body)
      open++
      mostOpen = Math.max(mostOpen, open)
      res.once("close", () => open--)
      if (text.startsWith("hold")) held.set(text, res)
      else answer(res, text)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    arrived,
    bodies,
    mostAtOnce: () => mostOpen,
    resetMostAtOnce: () => {
      mostOpen = open
    },
    isHeld: (text: string) => held.has(text),
    release: (text: string) => {
      const res = held.get(text)
      held.delete(text)
      if (res !== undefined) answer(res, text)
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const [text, res] of held) answer(res, text)
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
