import fc from "fast-check"
import { rmSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { type Answer, client } from "./support/client.js"
import { type NatsServer, startNatsServer } from "./support/natsServer.js"
import { startSluice, type Sluice, type TestClockControls } from "./support/sluice.js"
import { storedEvents, terminalsPerRow } from "./support/storedEvents.js"
import { type Healing, startTcpProxy, type TcpProxy } from "./support/tcpProxy.js"
import { waitFor } from "./support/waitFor.js"

/*
 * A model-based test of the scheduling rules: random sequences of submissions, outcomes, cancels,
 * key and account changes, quota exhaustion, midnights, closing windows, restarts and crashes, against
 * Sluice run as its own process, with its actors on a TestClock driven over the process's test-only
 * clock port (SLUICE_TEST_CLOCK). After every step the invariants are checked on what the API shows,
 * what the log holds and what the upstreams saw; among them, once a batch reads final it reads the
 * same ever after.
 *
 * Each account has its own model on its own simulator, so what one upstream saw is what one
 * account ran: that is how "no account exceeds its concurrency" and "a paused batch starts
 * nothing" are observed from outside. A restart stops the process gracefully (SIGTERM); a crash
 * kills it (SIGKILL). Either way a new process starts on the same data directory with its clock
 * where the old one's was.
 *
 * It runs twice: one process on the embedded log, and two processes on one nats-server, where each
 * model's actor runs on whichever instance holds its lease. There every command goes through either
 * instance, a restart or a crash hits one of them (a crashed owner's lease lapses and the other takes
 * the model over), and every batch reads the same through both instances. Both processes' TestClocks
 * move together.
 *
 * There each instance reaches the nats-server through a TCP proxy of its own, and a partition cuts one
 * of them off for a while: its connections hang, neither end hears from the other, and after a wall-clock
 * time drawn here (around the 1 s lease TTL, so the other instance sometimes takes its models over) they
 * either carry on or are reset and the client reconnects. The steps go on meanwhile. The cut instance may
 * answer what the API promises while the log is away (the batch endpoints `404`
 * `batch_inference_unavailable`, the admin API `503`), and every answer it does give keeps every
 * invariant. Once it has healed, the next check waits until the instance is ready again, as a restart does.
 */

const ACCOUNTS = ["acct-a", "acct-b"] as const
const MODEL_SLOTS = 3
const ACCOUNT_CONCURRENCY = 2
const FINAL = new Set(["completed", "failed", "expired", "cancelled"])
const FINAL_EVENTS = new Set(["batch_completed", "batch_failed", "batch_expired", "batch_cancelled"])
type Kind = "ok" | "transient" | "permanent"

interface Batch {
  readonly id: string
  readonly account: number
  readonly total: number
  finalStatus?: string
  /** What the API showed the first time it read the batch final: it must show exactly that ever after. */
  final?: { readonly batch: unknown; readonly rows: ReadonlyArray<unknown> }
}

interface Partition {
  readonly which: number
  /** Resolves once the proxy has healed, the cut's length after it began. */
  readonly healed: Promise<void>
}

interface World {
  readonly sims: ReadonlyArray<Simulator>
  readonly nats: NatsServer | undefined
  /** Each instance's way to the nats-server, by index (none on the embedded log). */
  readonly proxies: ReadonlyArray<TcpProxy>
  partition: Partition | undefined
  readonly sluices: Array<Sluice & TestClockControls>
  readonly keys: Array<{ readonly key: string; readonly keyId: string }>
  readonly batches: Array<Batch>
  /** Accounts whose batches may not start a row now, with the upstream request count when that began. */
  readonly held: Map<number, number>
  readonly revoked: Set<number>
  unique: number
}

const api = (w: World, account?: number, via = 0) =>
  client(w.sluices[via % w.sluices.length]!.url, account === undefined ? undefined : w.keys[account]!.key)
/** Every instance's TestClock moves by `ms`. */
const adjustAll = async (w: World, ms: number) => {
  for (const sluice of w.sluices) await sluice.adjust(ms)
}
const settle = () => new Promise((r) => setTimeout(r, 60))
const received = (w: World, account: number) => w.sims[account]!.stats().received

/** Whether instance `via` may find the log away: it is cut off, or was and has not been seen ready since. */
const mayBeAway = (w: World, via: number) => w.partition?.which === via % w.sluices.length
const batchesAway = (answer: Answer) => answer.status === 404 && answer.body?.error?.code === "batch_inference_unavailable"
const adminAway = (answer: Answer) => answer.status === 503 && answer.body?.error?.code === "service_unavailable"

/** Once a cut instance has healed, waits until it is ready again; a no-op while the cut lasts. */
const partitionOver = async (w: World) => {
  const cut = w.partition
  if (cut === undefined || w.proxies[cut.which]!.isCut()) return
  const sluice = w.sluices[cut.which]!
  await waitFor(`instance #${cut.which} to be ready after its partition`, async () => (await fetch(`${sluice.url}/readyz`)).status === 200)
  w.partition = undefined
}
/** Lets a partition run to its end, then waits until the instance is ready again. */
const healed = async (w: World) => {
  await w.partition?.healed
  await partitionOver(w)
}

/** An admin call through instance 0; answers whether it took effect (a cut instance may answer that the log is away). */
const adminCall = async (w: World, method: string, path: string, body?: unknown) => {
  const answer = await api(w).admin(method, path, body)
  if (adminAway(answer) && mayBeAway(w, 0)) return false
  expect(answer.status, answer.text).toBe(200)
  return true
}

/**
 * A batch and its rows as of one moment: rows keep finishing while the check reads, so the batch is
 * read again after its rows, and the reads are retried until nothing moved in between.
 */
const snapshot = async (reader: ReturnType<typeof client>, id: string): Promise<{ got: Answer; rows: Array<any> }> => {
  const progress = (body: any) => JSON.stringify([body?.status, body?.request_counts])
  for (let attempt = 0; ; attempt++) {
    const got = await reader.call("GET", `/v1/batches/${id}`)
    if (got.status !== 200) return { got, rows: [] }
    const rows: Array<any> = []
    for (let after = ""; ; ) {
      const page = await reader.call("GET", `/v1/batches/${id}/results?limit=1000${after}`)
      // A read refused part way (the log went away meanwhile) is the answer.
      if (page.status !== 200) return { got: page, rows: [] }
      rows.push(...page.body.data)
      if (!page.body.has_more) break
      after = `&after=${page.body.last_id}`
    }
    const again = await reader.call("GET", `/v1/batches/${id}`)
    if (again.status !== 200) return { got: again, rows: [] }
    if (progress(again.body) === progress(got.body) || attempt === 100) return { got, rows }
    await new Promise((r) => setTimeout(r, 20))
  }
}

const checkInvariants = async (w: World) => {
  for (const batch of w.batches) {
    // The log first: a revoked key or a used-up quota may not read through the API.
    const events = await storedEvents({ dataDir: w.sluices[0]!.dataDir, natsUrl: w.nats?.url }, batch.id)
    const closing = events.filter((e) => FINAL_EVENTS.has(e.type)).map((e) => e.type)
    // Final statuses are absorbing: one closing event at most, never followed by another.
    expect(closing.length).toBeLessThanOrEqual(1)
    if (closing[0] !== undefined) batch.finalStatus = closing[0]
    for (const [via, sluice] of w.sluices.entries()) {
    const reader = client(sluice.url, w.keys[batch.account]!.key)
    const { got, rows } = await snapshot(reader, batch.id)
    if (got.status === 200) {
      const counts = got.body.request_counts
      expect(rows.map((r) => r.id)).toEqual(rows.map((_, i) => `batch_req_${i + 1}`))
      const by = (status: string) => rows.filter((r) => r.status === status).length
      // Counts add up.
      expect(counts.total).toBe(batch.total)
      expect(counts.completed).toBe(by("completed"))
      expect(counts.failed).toBe(by("failed") + by("expired"))
      expect(by("queued") + by("running") + by("completed") + by("failed") + by("expired") + by("cancelled")).toBe(batch.total)
      if (FINAL.has(got.body.status)) {
        expect(`batch_${got.body.status}`).toBe(closing[0] ?? `batch_${got.body.status}`)
        // Final means final: reached only once nothing runs or waits, and once final nothing changes,
        // not a count, a result or cost_usd, until the batch is deleted.
        expect(by("running") + by("queued")).toBe(0)
        const seen = { batch: got.body, rows }
        if (batch.final === undefined) batch.final = seen
        else expect(seen).toEqual(batch.final)
      } else {
        expect(batch.final).toBeUndefined()
      }
    } else if (!(batchesAway(got) && mayBeAway(w, via))) {
      expect([401, 429], `instance #${via}: ${got.text}`).toContain(got.status)
    }
    }
    // No row attempted more than eight times, and no row's result recorded twice.
    const starts = new Map<number, number>()
    for (const e of events) if (e.type === "row_started" && e.row !== undefined) starts.set(e.row, (starts.get(e.row) ?? 0) + 1)
    for (const n of starts.values()) expect(n).toBeLessThanOrEqual(8)
    for (const n of terminalsPerRow(events, batch.total)) expect(n).toBeLessThanOrEqual(1)
  }
  for (const [account, sim] of w.sims.entries()) {
    // One model per account: its upstream never saw more than the model's slots or the account's concurrency.
    expect(sim.stats().maxInFlight).toBeLessThanOrEqual(Math.min(MODEL_SLOTS, ACCOUNT_CONCURRENCY))
    // A paused or waiting account's batches start nothing.
    const since = w.held.get(account)
    if (since !== undefined) expect(received(w, account)).toBeLessThanOrEqual(since + ACCOUNT_CONCURRENCY)
  }
}

type Command = fc.AsyncCommand<object, World>
const command = (name: string, run: (w: World) => Promise<void>, check: (w: World) => boolean = () => true): Command => ({
  check: () => true,
  run: async (_model, w) => {
    if (!check(w)) return
    await run(w)
    await settle()
    await partitionOver(w)
    await checkInvariants(w)
  },
  toString: () => name,
})

const submit = (account: number, kinds: ReadonlyArray<Kind>, via: number) =>
  command(`submit(${ACCOUNTS[account]}, ${kinds.join(",")}, via ${via})`, async (w) => {
    const requests = kinds.map((kind, i) => {
      const tag = `${w.unique++}`
      const content =
        kind === "ok" ? `ok ${tag}` : kind === "transient" ? `flaky ${tag} ${simDirective.fail(2, 503)}` : `bad ${tag} ${simDirective.status(400)}`
      return { custom_id: `r${i}`, body: { model: `m-${account}`, messages: [{ role: "user", content }] } }
    })
    const created = await api(w, account, via).call("POST", "/v1/batches", { requests })
    if (created.status === 200) w.batches.push({ id: created.body.id, account, total: kinds.length })
    else if (!(batchesAway(created) && mayBeAway(w, via))) expect([401, 403, 429], created.text).toContain(created.status)
  })

const cancel = (pick: number, via: number) =>
  command(`cancel(#${pick}, via ${via})`, async (w) => {
    const batch = w.batches[pick % w.batches.length]
    if (batch === undefined) return
    const answer = await api(w, batch.account, via).call("POST", `/v1/batches/${batch.id}/cancel`)
    if (!(batchesAway(answer) && mayBeAway(w, via))) expect([200, 401, 429], answer.text).toContain(answer.status)
  })

const advance = (ms: number) =>
  command(`advance(${ms}ms)`, async (w) => {
    await adjustAll(w, ms)
  })

const midnight = command("midnight", async (w) => {
  const now = await w.sluices[0]!.now()
  const next = Math.floor(now / 86_400_000) * 86_400_000 + 86_400_000
  await adjustAll(w, next - now + 1_000)
})

const revoke = (account: number) =>
  command(`revoke(${ACCOUNTS[account]})`, async (w) => {
    // Refused, it may have been stored all the same: a later call may still answer 401, which is allowed anyway.
    if (await adminCall(w, "POST", `/admin/v1/keys/${w.keys[account]!.keyId}/revoke`)) w.revoked.add(account)
  }, (w) => !w.revoked.has(account))

const suspend = (account: number) =>
  command(`suspend(${ACCOUNTS[account]})`, async (w) => {
    await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "suspended" })
  })

const restore = (account: number) =>
  command(`restore(${ACCOUNTS[account]})`, async (w) => {
    // Refused, it may have been stored all the same: the account is no longer known to be held either way.
    await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "active", tier: "internal", daily_quota_usd: null })
    w.held.delete(account)
  })

const exhaustQuota = (account: number) =>
  command(`exhaustQuota(${ACCOUNTS[account]})`, async (w) => {
    if (!(await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { daily_quota_usd: 0 }))) return
    await settle()
    w.held.set(account, received(w, account))
  })

const revokeAccess = (account: number) =>
  command(`standard(${ACCOUNTS[account]})`, async (w) => {
    if (!(await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { tier: "standard" }))) return
    await settle()
    w.held.set(account, received(w, account))
  })

const windowCloses = command("windowCloses", async (w) => {
  await adjustAll(w, 24 * 3_600_000 + 1_000)
})

/** Stops one process with `signal`, then starts a new one on its data directory, its clock where the old one's was. */
const stopAndStart = (signal: "SIGTERM" | "SIGKILL", which: number) => async (w: World) => {
  const i = which % w.sluices.length
  const old = w.sluices[i]!
  const at = await old.now()
  // A graceful stop drains the running rows (and hands its leases over) and exits 0; a kill leaves them
  // for the next process, or for the other instance once the dead one's leases lapse. A cut instance is
  // stopped while cut (its drain waits for the log), and the new one starts once the partition is over.
  expect(await old.stop(signal)).toBe(signal === "SIGTERM" ? 0 : "SIGKILL")
  if (mayBeAway(w, i)) {
    await w.partition!.healed
    w.partition = undefined
  }
  w.sluices[i] = await startInstance(w.sims, w.proxies[i], old.dataDir, at)
}
const restart = (which: number) => command(`restart(#${which})`, stopAndStart("SIGTERM", which))
const crash = (which: number) => command(`crash(#${which})`, stopAndStart("SIGKILL", which))

/** Cuts instance `which` off from the nats-server for `ms` of wall-clock time; the steps after go on meanwhile. */
const partition = (which: number, ms: number, how: Healing) =>
  command(
    `partition(#${which}, ${ms}ms, then ${how})`,
    async (w) => {
      const i = which % w.sluices.length
      const proxy = w.proxies[i]!
      proxy.cut()
      const healed = new Promise<void>((resolve) =>
        setTimeout(() => {
          proxy.heal(how)
          resolve()
        }, ms),
      )
      w.partition = { which: i, healed }
    },
    (w) => w.proxies.length > 0 && w.partition === undefined,
  )

/** An instance reaching the nats-server through `proxy`, or one on the embedded log without one. */
const startInstance = (sims: ReadonlyArray<Simulator>, proxy: TcpProxy | undefined, dataDir?: string, startAt?: number) =>
  startSluice({
    ...(proxy === undefined ? {} : { natsUrl: `nats://127.0.0.1:${proxy.port}`, env: { SLUICE_LEASE_TTL_MS: "1000" } }),
    // A timeout far past any clock jump here: a jump must not abandon requests the upstream still serves.
    models: sims.map((sim, i) => ({ id: `m-${i}`, upstream_url: sim.url, batch_concurrency: MODEL_SLOTS, input_usd_per_mtok: 1, output_usd_per_mtok: 1, timeout_ms: 30 * 86_400_000 })),
    testClock: startAt === undefined ? {} : { startMs: startAt },
    ...(dataDir === undefined ? {} : { dataDir }),
  })

const account = fc.integer({ min: 0, max: ACCOUNTS.length - 1 })
const instance = fc.nat({ max: 1 })
const submission = fc
  .tuple(account, fc.array(fc.constantFrom<Kind>("ok", "ok", "transient", "permanent"), { minLength: 1, maxLength: 6 }), instance)
  .map(([a, k, via]) => submit(a, k, via))
// From a few hundred ms to well past the 1 s lease TTL: sometimes the cut owner keeps its models, sometimes not.
const partitioning = fc
  .tuple(instance, fc.integer({ min: 200, max: 4_000 }), fc.constantFrom<Healing>("resume", "reset"))
  .map(([which, ms, how]) => partition(which, ms, how))
const commands = (nats: boolean) =>
  fc.commands(
    [
      submission,
      submission,
      submission,
      fc.constantFrom(1_000, 30_000).map(advance),
      fc.tuple(fc.nat(), instance).map(([pick, via]) => cancel(pick, via)),
      fc.constantFrom(1_000, 30_000, 300_000).map(advance),
      fc.constant(midnight),
      account.map(revoke),
      account.map(suspend),
      account.map(restore),
      account.map(exhaustQuota),
      account.map(revokeAccess),
      fc.constant(windowCloses),
      instance.map(restart),
      instance.map(crash),
      ...(nats ? [partitioning, partitioning, partitioning] : []),
    ],
    { maxCommands: 20 },
  )

const setups = [
  { name: "one instance on the embedded log", instances: 1, nats: false, numRuns: 12 },
  { name: "two instances on one nats-server", instances: 2, nats: true, numRuns: 6 },
] as const

describe.each(setups)("scheduling, model-based: $name", (setup) => {
  it("random sequences of submissions, outcomes, cancels, key, account and quota changes, midnights, closing windows, restarts, crashes and (on NATS) partitions keep every invariant, and every batch finishes", async () => {
    await fc.assert(
      fc.asyncProperty(commands(setup.nats), async (cmds) => {
        const sims = await Promise.all(ACCOUNTS.map(() => startSimulator({ models: ACCOUNTS.map((_, i) => `m-${i}`), latencyMs: 40 })))
        const nats = setup.nats ? await startNatsServer() : undefined
        const proxies = nats === undefined ? [] : await Promise.all(Array.from({ length: setup.instances }, () => startTcpProxy(nats.port)))
        const w: World = { sims, nats, proxies, partition: undefined, sluices: [], keys: [], batches: [], held: new Map(), revoked: new Set(), unique: 0 }
        try {
          w.sluices.push(await startInstance(sims, proxies[0]))
          for (let i = 1; i < setup.instances; i++) w.sluices.push(await startInstance(sims, proxies[i], undefined, await w.sluices[0]!.now()))
          for (const [i, id] of ACCOUNTS.entries()) {
            await api(w).admin("POST", "/admin/v1/accounts", { id, tier: "internal", concurrency: ACCOUNT_CONCURRENCY, models: [`m-${i}`] })
            const key = await api(w).admin("POST", `/admin/v1/accounts/${id}/keys`, {})
            w.keys.push({ key: key.body.key, keyId: key.body.id })
          }
          for (const [a] of ACCOUNTS.entries())
            for (const via of w.sluices.keys()) await waitFor("the key to reach every instance", async () => (await api(w, a, via).call("GET", "/v1/batches")).status === 200)
          await fc.asyncModelRun(() => ({ model: {}, real: w }), cmds)
          // Nothing is left stuck: with the partition over, every account restored and time moving on, every batch ends.
          await healed(w)
          for (const a of ACCOUNTS.keys()) await restore(a).run({}, w)
          for (let step = 0; step < 60 && w.batches.some((b) => b.finalStatus === undefined); step++) {
            await adjustAll(w, 3_600_000)
            await settle()
            await checkInvariants(w)
          }
          expect(w.batches.filter((b) => b.finalStatus === undefined).map((b) => b.id)).toEqual([])
        } finally {
          for (const sluice of w.sluices) {
            await sluice.stop("SIGKILL")
            rmSync(sluice.dataDir, { recursive: true, force: true })
          }
          await w.partition?.healed
          await Promise.all(proxies.map((p) => p.close()))
          await Promise.all(sims.map((s) => s.close()))
          await nats?.stop()
        }
      }),
      { numRuns: setup.numRuns },
    )
  }, 900_000)
})
