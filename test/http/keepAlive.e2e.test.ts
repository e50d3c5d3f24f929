import http from "node:http"
import type { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"

/*
 * A polling client keeps its connection: Sluice does not close an idle keep-alive connection after
 * node's default 5 s, which a client polling at about that pace races (the server resets a request
 * that reaches a connection it is closing). The wait is real time: the timeout is node's socket timer,
 * not the actors' Clock.
 */
const get = (agent: http.Agent, url: string) =>
  new Promise<{ status: number; socket: Socket }>((resolve, reject) => {
    let socket: Socket | undefined
    const req = http.get(url, { agent }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode ?? 0, socket: socket! }))
    })
    req.on("socket", (s) => (socket = s))
    req.on("error", reject)
  })

describe("keep-alive connections", () => {
  let sim: Simulator
  let sluice: InProcessSluice

  beforeAll(async () => {
    sim = await startSimulator()
    sluice = await startInProcessSluice({ models: [{ id: "glm-5.3-flash", upstream_url: sim.url, batch_concurrency: 1 }] })
  })
  afterAll(async () => {
    await sluice?.stop()
    await sim?.close()
  })

  it("a connection idle for longer than node's default 5 s is still open, and the next request goes on it", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    try {
      const first = await get(agent, `${sluice.url}/healthz`)
      expect(first.status).toBe(200)
      let closed = false
      first.socket.once("close", () => (closed = true))
      await new Promise((r) => setTimeout(r, 6_500))
      expect(closed).toBe(false)
      const second = await get(agent, `${sluice.url}/healthz`)
      expect(second.status).toBe(200)
      expect(second.socket).toBe(first.socket)
    } finally {
      agent.destroy()
    }
  }, 20_000)
})
