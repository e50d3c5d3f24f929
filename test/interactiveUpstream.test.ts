import { Effect } from "effect"
import net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { openUpstream, readAll } from "../src/actors/interactiveUpstream.js"
import type { ModelEntry } from "../src/config/Catalog.js"

const answer = (body: string) => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`

/**
 * A model server over raw TCP that answers the first request of each connection and, on a later one,
 * closes the connection without a word: what a server does to a kept-alive socket whose idle time it
 * had already judged too long as the request crossed.
 */
const closingServer = async () => {
  let connections = 0
  let requests = 0
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    connections++
    sockets.add(socket)
    let onThis = 0
    socket.on("data", (chunk) => {
      if (!chunk.toString("latin1").startsWith("POST")) return
      requests++
      onThis++
      if (onThis === 1) socket.write(answer(`{"n":${requests}}`))
      else socket.destroy()
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const port = (server.address() as net.AddressInfo).port
  return { port, stats: () => ({ connections, requests }), close: () =>
      new Promise<void>((r) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => r())
      }),
  }
}

const entry = (port: number): ModelEntry => ({
  id: "m",
  upstreamUrl: `http://127.0.0.1:${port}`,
  upstreamModel: "m",
  batchConcurrency: 1,
  inputUsdPerMtok: 0,
  outputUsdPerMtok: 0,
  timeoutMs: 5_000,
  apiKey: undefined,
  endpoints: ["/v1/chat/completions", "/v1/responses"],
})

const call = (model: ModelEntry) =>
  Effect.runPromise(
    Effect.flatMap(openUpstream(model, "{}"), (answered) => Effect.map(readAll(answered.body), (bytes) => ({ status: answered.status, body: bytes.toString() }))),
  )

describe("an interactive request to the model server", () => {
  let server: Awaited<ReturnType<typeof closingServer>> | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it("is sent again on a fresh connection when the kept-alive one it reused is closed before an answer", async () => {
    server = await closingServer()
    const model = entry(server.port)
    expect(await call(model)).toEqual({ status: 200, body: '{"n":1}' })
    // The second goes out on the kept-alive socket, which the server closes; then on a new one.
    expect(await call(model)).toEqual({ status: 200, body: '{"n":3}' })
    expect(server.stats()).toEqual({ connections: 2, requests: 3 })
  })

  it("fails once when a fresh connection is closed before an answer: it is not sent again", async () => {
    const silent = net.createServer((socket) => socket.on("data", () => socket.destroy()))
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r))
    let connections = 0
    silent.on("connection", () => connections++)
    try {
      const failed = await Effect.runPromise(Effect.flip(openUpstream(entry((silent.address() as net.AddressInfo).port), "{}")))
      expect(failed.message).toMatch(/could not be reached/)
      expect(connections).toBe(1)
    } finally {
      await new Promise<void>((r) => silent.close(() => r()))
    }
  })
})
