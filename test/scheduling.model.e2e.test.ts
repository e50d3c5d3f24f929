import fc from "fast-check"
import { rmSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { simDirective } from "../src/sim/Directives.js"
import { type Simulator, startSimulator } from "../src/sim/Simulator.js"
import { client } from "./support/client.js"
import { startSluice, type Sluice, type TestClockControls } from "./support/sluice.js"
import { storedEvents, terminalsPerRow } from "./support/storedEvents.js"

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

interface World {
  readonly sims: ReadonlyArray<Simulator>
  sluice: Sluice & TestClockControls
  readonly keys: Array<{ readonly key: string; readonly keyId: string }>
  readonly batches: Array<Batch>
  /** Accounts whose batches may not start a row now, with the upstream request count when that began. */
  readonly held: Map<number, number>
  readonly revoked: Set<number>
  unique: number
}

const api = (w: World, account?: number) => client(w.sluice.url, account === undefined ? undefined : w.keys[account]!.key)
const settle = () => new Promise((r) => setTimeout(r, 60))
const received = (w: World, account: number) => w.sims[account]!.stats().received

/**
 * A batch and its rows as of one moment: rows keep finishing while the check reads, so the batch is
 * read again after its rows, and the reads are retried until nothing moved in between.
 */
const snapshot = async (reader: ReturnType<typeof client>, id: string) => {
  const progress = (body: any) => JSON.stringify([body?.status, body?.request_counts])
  for (let attempt = 0; ; attempt++) {
    const got = await reader.call("GET", `/v1/batches/${id}`)
    if (got.status !== 200) return { got, rows: [] }
    const rows = await reader.allResults(id)
    const again = await reader.call("GET", `/v1/batches/${id}`)
    if ((again.status === 200 && progress(again.body) === progress(got.body)) || attempt === 100) return { got, rows }
    await new Promise((r) => setTimeout(r, 20))
  }
}

const checkInvariants = async (w: World) => {
  for (const batch of w.batches) {
    // The log first: a revoked key or a used-up quota may not read through the API.
    const events = await storedEvents({ dataDir: w.sluice.dataDir }, batch.id)
    const closing = events.filter((e) => FINAL_EVENTS.has(e.type)).map((e) => e.type)
    // Final statuses are absorbing: one closing event at most, never followed by another.
    expect(closing.length).toBeLessThanOrEqual(1)
    if (closing[0] !== undefined) batch.finalStatus = closing[0]
    const reader = client(w.sluice.url, w.keys[batch.account]!.key)
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
    } else {
      expect([401, 429]).toContain(got.status)
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
    await checkInvariants(w)
  },
  toString: () => name,
})

const submit = (account: number, kinds: ReadonlyArray<Kind>) =>
  command(`submit(${ACCOUNTS[account]}, ${kinds.join(",")})`, async (w) => {
    const requests = kinds.map((kind, i) => {
      const tag = `${w.unique++}`
      const content =
        kind === "ok" ? `ok ${tag}` : kind === "transient" ? `flaky ${tag} ${simDirective.fail(2, 503)}` : `bad ${tag} ${simDirective.status(400)}`
      return { custom_id: `r${i}`, body: { model: `m-${account}`, messages: [{ role: "user", content }] } }
    })
    const created = await api(w, account).call("POST", "/v1/batches", { requests })
    if (created.status === 200) w.batches.push({ id: created.body.id, account, total: kinds.length })
    else expect([401, 403, 429]).toContain(created.status)
  })

const cancel = (pick: number) =>
  command(`cancel(#${pick})`, async (w) => {
    const batch = w.batches[pick % w.batches.length]
    if (batch === undefined) return
    const answer = await api(w, batch.account).call("POST", `/v1/batches/${batch.id}/cancel`)
    expect([200, 401, 429]).toContain(answer.status)
  })

const advance = (ms: number) =>
  command(`advance(${ms}ms)`, async (w) => {
    await w.sluice.adjust(ms)
  })

const midnight = command("midnight", async (w) => {
  const now = await w.sluice.now()
  const next = Math.floor(now / 86_400_000) * 86_400_000 + 86_400_000
  await w.sluice.adjust(next - now + 1_000)
})

const revoke = (account: number) =>
  command(`revoke(${ACCOUNTS[account]})`, async (w) => {
    await api(w).admin("POST", `/admin/v1/keys/${w.keys[account]!.keyId}/revoke`)
    w.revoked.add(account)
  }, (w) => !w.revoked.has(account))

const suspend = (account: number) =>
  command(`suspend(${ACCOUNTS[account]})`, async (w) => {
    await api(w).admin("PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "suspended" })
  })

const restore = (account: number) =>
  command(`restore(${ACCOUNTS[account]})`, async (w) => {
    await api(w).admin("PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "active", tier: "internal", daily_quota_usd: null })
    w.held.delete(account)
  })

const exhaustQuota = (account: number) =>
  command(`exhaustQuota(${ACCOUNTS[account]})`, async (w) => {
    await api(w).admin("PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { daily_quota_usd: 0 })
    await settle()
    w.held.set(account, received(w, account))
  })

const revokeAccess = (account: number) =>
  command(`standard(${ACCOUNTS[account]})`, async (w) => {
    await api(w).admin("PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { tier: "standard" })
    await settle()
    w.held.set(account, received(w, account))
  })

const windowCloses = command("windowCloses", async (w) => {
  await w.sluice.adjust(24 * 3_600_000 + 1_000)
})

/** Stops the process with `signal`, then starts a new one on the same data directory, its clock where the old one's was. */
const stopAndStart = (signal: "SIGTERM" | "SIGKILL") => async (w: World) => {
  const at = await w.sluice.now()
  // A graceful stop drains the running rows and exits 0; a kill leaves them for the next process.
  expect(await w.sluice.stop(signal)).toBe(signal === "SIGTERM" ? 0 : "SIGKILL")
  w.sluice = await startWorld(w.sims, w.sluice.dataDir, at)
}
const restart = command("restart", stopAndStart("SIGTERM"))
const crash = command("crash", stopAndStart("SIGKILL"))

const startWorld = (sims: ReadonlyArray<Simulator>, dataDir?: string, startAt?: number) =>
  startSluice({
    // A timeout far past any clock jump here: a jump must not abandon requests the upstream still serves.
    models: sims.map((sim, i) => ({ id: `m-${i}`, upstream_url: sim.url, batch_concurrency: MODEL_SLOTS, input_usd_per_mtok: 1, output_usd_per_mtok: 1, timeout_ms: 30 * 86_400_000 })),
    testClock: startAt === undefined ? {} : { startMs: startAt },
    ...(dataDir === undefined ? {} : { dataDir }),
  })

const account = fc.integer({ min: 0, max: ACCOUNTS.length - 1 })
const submission = fc
  .tuple(account, fc.array(fc.constantFrom<Kind>("ok", "ok", "transient", "permanent"), { minLength: 1, maxLength: 6 }))
  .map(([a, k]) => submit(a, k))
const commands = fc.commands(
  [
    submission,
    submission,
    submission,
    fc.constantFrom(1_000, 30_000).map(advance),
    fc.nat().map(cancel),
    fc.constantFrom(1_000, 30_000, 300_000).map(advance),
    fc.constant(midnight),
    account.map(revoke),
    account.map(suspend),
    account.map(restore),
    account.map(exhaustQuota),
    account.map(revokeAccess),
    fc.constant(windowCloses),
    fc.constant(restart),
    fc.constant(crash),
  ],
  { maxCommands: 20 },
)

describe("scheduling, model-based", () => {
  it("random sequences of submissions, outcomes, cancels, key, account and quota changes, midnights, closing windows, restarts and crashes keep every invariant, and every batch finishes", async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const sims = await Promise.all(ACCOUNTS.map(() => startSimulator({ models: ACCOUNTS.map((_, i) => `m-${i}`), latencyMs: 40 })))
        const w: World = { sims, sluice: await startWorld(sims), keys: [], batches: [], held: new Map(), revoked: new Set(), unique: 0 }
        try {
          for (const [i, id] of ACCOUNTS.entries()) {
            await api(w).admin("POST", "/admin/v1/accounts", { id, tier: "internal", concurrency: ACCOUNT_CONCURRENCY, models: [`m-${i}`] })
            const key = await api(w).admin("POST", `/admin/v1/accounts/${id}/keys`, {})
            w.keys.push({ key: key.body.key, keyId: key.body.id })
          }
          await fc.asyncModelRun(() => ({ model: {}, real: w }), cmds)
          // Nothing is left stuck: with every account restored and time moving on, every batch ends.
          for (const a of ACCOUNTS.keys()) await restore(a).run({}, w)
          for (let step = 0; step < 60 && w.batches.some((b) => b.finalStatus === undefined); step++) {
            await w.sluice.adjust(3_600_000)
            await settle()
            await checkInvariants(w)
          }
          expect(w.batches.filter((b) => b.finalStatus === undefined).map((b) => b.id)).toEqual([])
        } finally {
          await w.sluice.stop("SIGKILL")
          rmSync(w.sluice.dataDir, { recursive: true, force: true })
          await Promise.all(sims.map((s) => s.close()))
        }
      }),
      { numRuns: 12 },
    )
  }, 600_000)
})
