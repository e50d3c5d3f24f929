import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Chunk, Context, Effect, Layer, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventLog, type LogMessage } from "../src/eventlog/EventLog.js"
import * as JetStreamEventLog from "../src/eventlog/JetStreamEventLog.js"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { chatRow, client } from "./support/client.js"
import { type NatsServer, startNatsServer, stopProcess } from "./support/natsServer.js"
import { type Sluice, startSluice } from "./support/sluice.js"
import { waitFor } from "./support/waitFor.js"

/*
 * examples/consume-batch-events.mjs, run as a process against a live batch on a real nats-server:
 * killed (SIGKILL) and started again twice while the batch runs, the second time with the server down,
 * then the server restarted under it. It
 * must end with every message of the batch's subjects written once, in order, parts joined, each
 * link of every subject's hash chain checked and sound.
 */

const MODEL = "glm-5.3-flash"
const DURABLE = "example-test"
const EXAMPLE = fileURLToPath(new URL("../examples/consume-batch-events.mjs", import.meta.url))

interface Line {
  readonly seq: number
  readonly subject: string
  readonly type: string
  readonly sha256: string | null
  readonly chain: string
  readonly event: unknown
}

describe("the example durable consumer", () => {
  let nats: NatsServer
  let sim: Simulator
  let sluice: Sluice
  const dir = mkdtempSync(join(tmpdir(), "sluice-consumer-"))
  const out = join(dir, "events.jsonl")
  let consumer: ChildProcess | undefined
  let consumerOutput = ""
  /** What the running consumer process has printed. */
  let currentOutput = ""

  const startConsumer = () => {
    const child = spawn(process.execPath, [EXAMPLE, "--out", out, "--durable", DURABLE], {
      env: { PATH: process.env.PATH ?? "", NATS_URL: nats.url },
      stdio: ["ignore", "ignore", "pipe"],
    })
    currentOutput = ""
    child.stderr?.on("data", (d: Buffer) => {
      consumerOutput = (consumerOutput + d.toString()).slice(-8000)
      if (consumer === child) currentOutput += d.toString()
    })
    consumer = child
  }
  const lines = (): Array<Line> =>
    existsSync(out) ? readFileSync(out, "utf8").split("\n").filter((l) => l !== "" && l.endsWith("}")).map((l) => JSON.parse(l) as Line) : []

  beforeAll(async () => {
    nats = await startNatsServer()
    sim = await startSimulator({ models: [MODEL], latencyMs: 100 })
    sluice = await startSluice({ natsUrl: nats.url, models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }] })
  })
  afterAll(async () => {
    if (consumer !== undefined) await stopProcess(consumer)
    await sluice?.stop()
    sluice?.cleanup()
    await sim?.close()
    await nats?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  // Its waits are bounded one by one (up to 30 + 30 + 60 + 120 + 60 s); the suite's 60 s default is less than their sum.
  it("receives every message of a batch exactly once, in order and whole, with sound chains, across its own kill and a nats-server restart", { timeout: 300_000 }, async () => {
    startConsumer()
    const api = client(sluice.url)
    const rows = [
      chatRow("large-request", "lorem ipsum dolor sit amet ".repeat(45_000)),
      chatRow("large-response", `At length ${simDirective.tokens(250_000)}`),
      chatRow("retried", `Once more ${simDirective.fail(1, 500)}`),
      ...Array.from({ length: 150 }, (_, i) => chatRow(`row-${i}`, `question ${i}`)),
    ]
    const created = await api.call("POST", "/v1/batches", { requests: rows })
    expect(created.status, created.text).toBe(200)
    const id = created.body.id as string

    // Killed twice, wherever it is: writing a line, acking one, waiting for the next. The second time it
    // starts while nats-server is down, and must wait for it rather than exit (CI saw a start land inside
    // the restart below and the process die on its first connect's ECONNREFUSED).
    for (const after of [5, 25]) {
      await waitFor(`the consumer's first ${after} lines`, async () => lines().length >= after, { timeoutMs: 30_000 })
      consumer!.kill("SIGKILL")
      await new Promise((r) => consumer!.once("exit", r))
      if (after === 5) {
        startConsumer()
        continue
      }
      await nats.halt()
      startConsumer()
      await waitFor("the consumer started with nats-server down to try connecting", async () => currentOutput.startsWith("connecting to "), { timeoutMs: 30_000 })
      // A refused connection is answered at once: a consumer that gives up on it has exited well within this.
      await new Promise((r) => setTimeout(r, 1_500))
      expect(consumer!.exitCode, consumerOutput).toBeNull()
      await nats.start()
    }

    // While its log comes back from the outage above, Sluice answers the seed's "unavailable at the moment".
    await waitFor("a third of the rows to settle", async () => {
      const answer = await api.call("GET", `/v1/batches/${id}`)
      if (answer.body?.error?.code === "batch_inference_unavailable" && answer.headers.get("retry-after") !== null) return false
      expect(answer.status, answer.text).toBe(200)
      return answer.body.request_counts.completed >= 50
    }, { timeoutMs: 60_000 })
    expect((await api.call("GET", `/v1/batches/${id}`)).body.status).toBe("in_progress")
    await nats.restart()

    const done = await api.waitFinal(id, 120_000)
    expect(done.status).toBe("completed")
    const stored = await Effect.runPromise(
      Effect.scoped(
        Effect.flatMap(Layer.build(JetStreamEventLog.layer({ url: nats.url })), (context) =>
          Effect.map(Stream.runCollect(Context.get(context, EventLog).read("batch.>", 1)), (c) => Chunk.toReadonlyArray(c) as ReadonlyArray<LogMessage>),
        ),
      ),
    )
    const last = stored[stored.length - 1]!.seq
    await waitFor("the consumer to reach the log's last batch message", async () => (lines().at(-1)?.seq ?? 0) >= last, { timeoutMs: 60_000 }).catch((e: Error) => {
      throw new Error(`${e.message} (seq ${last}; it wrote up to ${lines().at(-1)?.seq ?? "none"}); its output:\n${consumerOutput}`)
    })
    await stopProcess(consumer!)
    consumer = undefined

    const got = lines()
    expect(got.map((l) => [l.seq, l.subject]), consumerOutput).toEqual(stored.map((m) => [m.seq, m.subject]))
    expect(got.filter((l) => l.chain !== "ok"), consumerOutput).toEqual([])
    got.forEach((line, i) => {
      expect(line.sha256).toBe(stored[i]!.headers?.["Sluice-Sha256"])
      expect(line.event).toEqual(JSON.parse(new TextDecoder().decode(stored[i]!.data)))
    })
    // What the run must have exercised: messages in parts, lane windows, the batch from start to end.
    expect(stored.filter((m) => m.firstSeq !== undefined).map((m) => m.subject.split(".").slice(2).join("."))).toEqual(
      expect.arrayContaining(["row_bodies", expect.stringMatching(/^lane\./)]),
    )
    expect(got.map((l) => l.type)).toEqual(expect.arrayContaining(["row_bodies", "rows_added", "batch_created", "lane_window", "batch_completed"]))
    expect(got.every((l) => l.subject.startsWith(`batch.${id}.`))).toBe(true)

    // The server kept the durable consumer's place: nothing pending, nothing awaiting an ack.
    const nc = await connect({ servers: nats.url })
    try {
      const info = await (await jetstreamManager(nc)).consumers.info("SLUICE", DURABLE)
      expect(info.num_pending).toBe(0)
      expect(info.num_ack_pending).toBe(0)
      expect(info.ack_floor.stream_seq).toBeGreaterThanOrEqual(last)
    } finally {
      await nc.close()
    }
  })
})
