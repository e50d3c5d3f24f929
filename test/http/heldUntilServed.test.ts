import { createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { heldUntilServed } from "../../src/http/heldUntilServed.js"

/** A GET on its own connection; its answer's body, or "no answer" if none came within `ms`. */
const get = (server: Server, path: string, ms: number) =>
  new Promise<string>((resolve, reject) => {
    const { port } = server.address() as AddressInfo
    const req = httpRequest({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = ""
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => resolve(body))
    })
    req.setTimeout(ms, () => {
      req.destroy()
      resolve("no answer")
    })
    req.on("error", reject)
    req.end()
  })

const listening = (server: Server) => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const arrived = (server: Server, n: number) =>
  new Promise<void>((resolve) => {
    let seen = 0
    server.on("connection", (socket) => socket.once("data", () => ++seen === n && setTimeout(resolve, 50)))
  })
const answering = (request: { url?: string }, response: { end: (body: string) => void }) => response.end(`answered ${request.url}`)

describe("requests that arrive before the server's handler is installed", () => {
  const servers: Array<Server> = []
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections()
      await new Promise((r) => s.close(r))
    }
  })

  it("without the hold, a request let in before the handler is never answered", async () => {
    const server = createServer()
    servers.push(server)
    await listening(server)
    const early = get(server, "/early", 1_000)
    await arrived(server, 1)
    server.on("request", answering)
    expect(await early).toBe("no answer")
    expect(await get(server, "/later", 5_000)).toBe("answered /later")
  })

  it("with it, requests held before the handler are handed to it in the order they came, and later ones go straight to it", async () => {
    const server = heldUntilServed(createServer())
    servers.push(server)
    await listening(server)
    const seen: Array<string> = []
    const first = get(server, "/first", 5_000)
    await arrived(server, 1)
    const second = get(server, "/second", 5_000)
    await arrived(server, 1)
    server.on("request", (request, response) => {
      seen.push(request.url!)
      answering(request, response)
    })
    expect(await Promise.all([first, second])).toEqual(["answered /first", "answered /second"])
    expect(await get(server, "/third", 5_000)).toBe("answered /third")
    expect(seen).toEqual(["/first", "/second", "/third"])
    expect(server.listenerCount("request")).toBe(1)
  })
})
