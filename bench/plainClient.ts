import type http from "node:http"
import { keepAliveAgent, request } from "./http.js"

/** One chat completion, the answer parsed as Sluice parses it; a non-2xx answer throws. */
export const postChat = async (agent: http.Agent, upstreamUrl: string, body: string): Promise<unknown> => {
  const reply = await request(agent, `${upstreamUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  })
  if (reply.status < 200 || reply.status >= 300) throw new Error(`upstream answered ${reply.status}: ${reply.body.toString()}`)
  return JSON.parse(reply.body.toString("utf8"))
}

/**
 * The baseline a user could write without Sluice: the same request bodies to the same upstream,
 * `concurrency` in flight over a keep-alive pool like Sluice's. Answers the wall time in ms.
 */
export const runPlainClient = async (upstreamUrl: string, bodies: ReadonlyArray<string>, concurrency: number): Promise<number> => {
  const agent = keepAliveAgent(concurrency * 2)
  let next = 0
  const worker = async () => {
    while (next < bodies.length) await postChat(agent, upstreamUrl, bodies[next++]!)
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const ms = performance.now() - t0
  agent.destroy()
  return ms
}
