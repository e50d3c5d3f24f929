import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { runCli, SLUICE_BIN } from "../support/cli.js"
import { chatRow, client } from "../support/client.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { type Sluice, startSluice } from "../support/sluice.js"
import { startTcpProxy, type TcpProxy } from "../support/tcpProxy.js"
import { waitFor } from "../support/waitFor.js"

/*
 * `sluice responses tail` as a consumer runs it: a process that prints the feed as JSONL and keeps its
 * place in a checkpoint file, killed with SIGKILL while rows complete and started again, on the same
 * instance (embedded log) or, behind the same address, on another instance of the same NATS log.
 */

const MODEL = "glm-5.3-flash"
/** One row at a time, each taking a while: completions arrive one by one while the tail runs. */
const SLOW = "slow-model"

interface Tail {
  lines(): Array<any>
  kill(): Promise<unknown>
}

describe("sluice responses tail, killed and run again", () => {
  let nats: NatsServer | undefined
  let sim: Simulator | undefined
  let proxy: TcpProxy | undefined
  let dir: string | undefined
  const instances: Array<Sluice> = []
  const tails: Array<ChildProcess> = []

  afterEach(async () => {
    for (const t of tails.splice(0)) t.kill("SIGKILL")
    await proxy?.close()
    for (const s of instances.splice(0)) {
      // A row left running would keep a graceful stop waiting.
      await s.stop("SIGKILL")
      s.cleanup()
    }
    await sim?.close()
    await nats?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    nats = sim = proxy = dir = undefined
  })

  const startTail = (env: Record<string, string>, args: ReadonlyArray<string>): Tail => {
    const child = spawn(SLUICE_BIN, ["responses", "tail", ...args], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    tails.push(child)
    let stdout = ""
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()))
    const exited = new Promise((resolve) => child.once("close", resolve))
    return {
      lines: () => stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)),
      kill: () => {
        child.kill("SIGKILL")
        return exited
      },
    }
  }

  const waitingCalls = async (url: string) => {
    const text = await (await fetch(`${url}/metrics`)).text()
    return Number(/^sluice_completion_feed_waiting (\d+)$/m.exec(text)?.[1] ?? Number.NaN)
  }

  const scenario = async (log: "embedded" | "nats") => {
    sim = await startSimulator({ models: [MODEL] })
    const models = [
      { id: MODEL, upstream_url: sim.url, batch_concurrency: 4 },
      { id: SLOW, upstream_url: sim.url, upstream_model: MODEL, batch_concurrency: 1 },
    ]
    if (log === "nats") nats = await startNatsServer()
    for (const name of log === "nats" ? ["one", "two"] : ["one"]) {
      instances.push(await startSluice({ models, ...(nats === undefined ? {} : { natsUrl: nats.url }), env: { SLUICE_INSTANCE_ID: name } }))
    }
    const [first, second = first] = instances as [Sluice, Sluice?]
    // The consumer's one address, as behind a load balancer: the second run reaches the other instance.
    proxy = await startTcpProxy(first.port)
    const base = `http://127.0.0.1:${proxy.port}/v1`
    const api = client(first.url)
    const account = `acct-${Math.random().toString(36).slice(2, 10)}`
    expect((await api.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })).status).toBe(200)
    const key = (await api.admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key as string
    const mine = client(first.url, key)
    dir = mkdtempSync(join(tmpdir(), "sluice-tail-"))
    const env = { SLUICE_CONFIG: join(dir, "credentials.json"), SLUICE_BASE_URL: base, SLUICE_API_KEY: key }
    const checkpoint = () => JSON.parse(readFileSync(join(dir!, "checkpoints.json"), "utf8"))[`${base}:__responses_events__:c1`]?.last_completion_id

    const firstRun = startTail(env, ["--consumer", "c1"])
    await waitFor("the tail to wait for events", async () => (await waitingCalls(first.url)) === 1)
    const early = await mine.call("POST", "/v1/batches", { requests: [chatRow("early-0", "one"), chatRow("early-1", "two"), chatRow("early-2", "three")] })
    await waitFor("the tail to print the first batch's rows", () => firstRun.lines().length === 3)
    const slow = Array.from({ length: 8 }, (_, i) => chatRow(`slow-${i}`, `row ${i} ${simDirective.latency(250)}`, SLOW))
    const late = await mine.call("POST", "/v1/batches", { requests: slow })
    expect(late.status, late.text).toBe(200)
    await waitFor("the tail to print some of the slow rows", () => firstRun.lines().length >= 5)
    await firstRun.kill()
    for (const id of [early.body.id, late.body.id]) await mine.waitFinal(id)

    const all = [...((await mine.call("GET", "/v1/responses/events?limit=100")).body.data as Array<any>)].reverse()
    expect(all).toHaveLength(11)
    const printed = firstRun.lines()
    // What the first run printed is the feed's beginning, each event once.
    expect(printed).toEqual(all.slice(0, printed.length))
    // It saved each event once printed: killed between the two, the last printed is not saved yet.
    const saved = printed.findIndex((e) => e.completion_id === checkpoint())
    expect(saved).toBeGreaterThanOrEqual(printed.length - 2)

    proxy.retarget(second.port)
    const secondRun = startTail(env, ["--consumer", "c1"])
    await waitFor(
      "the second run to catch up and wait for more",
      async () => secondRun.lines().length >= all.length - (saved + 1) && (await waitingCalls(second.url)) === 1,
    )
    await secondRun.kill()
    // Resumed after its checkpoint: together, every event once, in order, no gap.
    expect([...printed.slice(0, saved + 1), ...secondRun.lines()]).toEqual(all)
    expect(checkpoint()).toBe(all[all.length - 1].completion_id)

    // --from-latest --limit: the newest events, oldest first, then exit; --no-checkpoint leaves the file alone.
    const latest = await runCli(["responses", "tail", "--consumer", "c1", "--from-latest", "--no-checkpoint", "--limit", "3"], env, dir)
    expect(latest.code, latest.stderr).toBe(0)
    expect(latest.stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual(all.slice(-3))
    expect(checkpoint()).toBe(all[all.length - 1].completion_id)
    const fresh = await runCli(["responses", "tail", "--consumer", "c2", "--from-latest", "--limit", "2"], env, dir)
    expect(fresh.code, fresh.stderr).toBe(0)
    expect(fresh.stdout.trim().split("\n").map((l) => JSON.parse(l).completion_id)).toEqual(all.slice(-2).map((e) => e.completion_id))
    const file = JSON.parse(readFileSync(join(dir, "checkpoints.json"), "utf8"))
    expect(file[`${base}:__responses_events__:c2`]).toEqual({ last_completion_id: all[all.length - 1].completion_id, updated_at: expect.any(String) })
  }

  it("on the embedded log, the run started again prints every event after its checkpoint: with the first run's, each once, no gap", async () => {
    await scenario("embedded")
  }, 120_000)

  it("on NATS, resumed on another instance behind the same address, the same", async () => {
    await scenario("nats")
  }, 120_000)
})
