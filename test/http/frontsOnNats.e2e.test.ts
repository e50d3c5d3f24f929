import { request } from "node:http"
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { jetstream } from "@nats-io/jetstream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatRow, client } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { BOOTSTRAP_KEY, type Sluice, startSluice } from "../support/sluice.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A GET through the port, on a connection of its own: the kernel gives it to one of the fronts. */
const fromPort = (url: string, path: string) =>
  new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const headers = { authorization: `Bearer ${BOOTSTRAP_KEY}` }
    request({ host: "127.0.0.1", port: Number(new URL(url).port), path, headers, agent: false }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }))
    })
      .on("error", reject)
      .end()
  })

describe("HTTP fronts on NATS: a read asks the log what the calls wrote, not the dispatch process", () => {
  let nats: NatsServer
  let nc: NatsConnection
  let gated: Awaited<ReturnType<typeof startGatedUpstream>>
  let sluice: Sluice
  let completed: string

  beforeAll(async () => {
    nats = await startNatsServer()
    nc = await connect({ servers: nats.url })
    gated = await startGatedUpstream()
    sluice = await startSluice({
      natsUrl: nats.url,
      env: { SLUICE_HTTP_WORKERS: "1" },
      models: [{ id: "gated", upstream_url: gated.url, batch_concurrency: 1 }],
    })
    const api = client(sluice.url)
    for (let i = 0; i < 100 && !sluice.output().includes("hand on at"); i++) await sleep(50)
    const done = await api.call("POST", "/v1/batches", { requests: [chatRow("a", "first", "gated")] })
    expect(done.status, done.text).toBe(200)
    completed = done.body.id
    await api.waitFinal(completed)
  }, 120_000)

  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
    await gated?.close()
    await nc?.close()
    await nats?.stop()
  })

  it("answers the polled reads with the dispatch process paused while its read model holds every call's write, and waits for it once a call wrote more", async () => {
    const paths = [`/v1/batches/${completed}`, `/v1/batches/${completed}/results?limit=1`, "/v1/batches?limit=1"]
    const before = await Promise.all(paths.map((path) => fromPort(sluice.url, path)))
    expect(before.map((r) => r.status)).toEqual([200, 200, 200])
    sluice.signal("SIGSTOP")
    try {
      for (const [i, path] of paths.entries()) {
        const read = await Promise.race([fromPort(sluice.url, path), sleep(10_000).then(() => "no answer in 10 s")])
        expect(read, path).toEqual(before[i])
      }
      // A write as another instance's call makes one (a message no projection knows, on an account's
      // subject): the paused process's read model has not applied it, so a read waits for it to.
      await jetstream(nc).publish("account.acct_elsewhere.noted", "{}")
      const waiting = fromPort(sluice.url, paths[0]!)
      expect(await Promise.race([waiting, sleep(1_000).then(() => "waiting")])).toBe("waiting")
      sluice.signal("SIGCONT")
      expect(await waiting).toEqual(before[0])
    } finally {
      sluice.signal("SIGCONT")
    }
  })
})
