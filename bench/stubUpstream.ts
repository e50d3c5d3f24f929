/**
 * The minimal upstream of B2s, B2c and B12s (issue 29): every POST …/chat/completions is answered at
 * once with one fixed chat completion, so the upstream's own cost is as small as a node:http server's
 * can be and stays out of Sluice's ratio to the plain client. Run as its own process (`startStub` in
 * processes.ts), so its CPU is neither Sluice's nor the client's.
 */
import http from "node:http"
import { parseArgs } from "node:util"

const ANSWER = Buffer.from(
  JSON.stringify({
    id: "chatcmpl-stub",
    object: "chat.completion",
    created: 1_767_225_600,
    model: "bench-stub",
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: 8, completion_tokens: 1, total_tokens: 9 },
  }),
)
const JSON_HEADERS = { "content-type": "application/json", "content-length": ANSWER.length }

const { values } = parseArgs({ options: { port: { type: "string" } }, strict: true })

const server = http.createServer((req, res) => {
  req.resume()
  req.on("end", () => {
    if (req.method === "POST" && req.url?.endsWith("/chat/completions") === true) {
      res.writeHead(200, JSON_HEADERS)
      res.end(ANSWER)
    } else if (req.url === "/health") {
      res.writeHead(200, { "content-type": "text/plain" })
      res.end("ok")
    } else {
      res.writeHead(404)
      res.end()
    }
  })
})
// Longer than any pause between the bench's trials, so no trial opens its sockets again.
server.keepAliveTimeout = 120_000
server.headersTimeout = 121_000
server.listen(Number(values.port), "127.0.0.1")
