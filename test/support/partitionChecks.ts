import { join } from "node:path"
import { expect } from "vitest"
import { type BatchLoad, type CreatedBatch, rowContent } from "./batchLoad.js"
import { client } from "./client.js"
import { type Instance, type Lease, MODELS, type PartitionedDeployment, SLOTS, withTimeout } from "./partitionedDeployment.js"
import { runToEnd } from "./processRun.js"
import { digestsPerLeader, replicaStates, streamSettled } from "./replicaAgreement.js"
import { laneWindows, lifecycleEvents, readStream, type StreamMessage } from "./sluiceStream.js"
import { settlesWithoutStart } from "./storedEvents.js"
import { waitFor } from "./waitFor.js"

const FINAL = ["completed", "failed", "expired", "cancelled"]
const projectRoot = join(import.meta.dirname, "..", "..")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface FaultTimes {
  /** When the first link went down. */
  readonly cutAt: number
  /** When the last link came back. */
  readonly healedAt: number
  /** The leases as they stood just before the cut. */
  readonly leasesAtCut: ReadonlyArray<Lease>
}

export interface Figures {
  /** Per model: from the cut to the first row start by an instance other than its owner at the cut. */
  readonly failoverMs: Record<string, number | undefined>
  /** Per model: upstream requests beyond one per row (the simulator's count less the rows). */
  readonly upstreamRepeats: Record<string, number>
  /** Rows the log shows started more than once. */
  readonly rowsStartedAgain: number
  readonly maxInFlight: Record<string, number>
  /** From the heal to the last batch seen final. */
  readonly finalAfterHealMs: number | undefined
  readonly batches: number
  readonly createRetries: number
  /** Nodes whose copy of the stream was read as leader and compared. */
  readonly replicasRead: number
}

/** An instance's warnings and errors, the last `lines` of them, for a failure's message. */
export const logExcerpt = (instance: Instance, lines = 25): string =>
  instance
    .output()
    .split("\n")
    .filter((l) => /level=(warn|error|fatal)|WARN|ERROR/i.test(l))
    .slice(-lines)
    .join("\n")

const readBatch = async (instance: Instance, id: string) =>
  withTimeout(`${instance.name} GET ${id}`, client(instance.url).call("GET", `/v1/batches/${id}`), 3_000).then(
    (a) => (a.status === 200 ? a.body : { unreadable: a.status, text: a.text.slice(0, 300) }),
    (e: unknown) => ({ unreadable: String(e) }),
  )

/** Polls every batch through every instance until one of them reads it final; answers when each was first seen final. */
const finals = async (d: PartitionedDeployment, batches: ReadonlyArray<CreatedBatch>, deadline: number): Promise<Map<string, number>> => {
  const seen = new Map<string, number>()
  while (seen.size < batches.length && Date.now() < deadline) {
    await Promise.all(
      batches
        .filter((b) => !seen.has(b.id))
        .map(async (b) => {
          for (const i of d.instances) {
            if (FINAL.includes((await readBatch(i, b.id)).status)) return void seen.set(b.id, Date.now())
          }
        }),
    )
    await sleep(250)
  }
  return seen
}

const readiness = async (instance: Instance) =>
  withTimeout(`${instance.name} /readyz`, fetch(`${instance.url}/readyz`).then((r) => r.json()), 3_000).catch(() => undefined) as Promise<
    { status?: string; log?: { head: number }; projections?: { applied: number } } | undefined
  >

/** Waits until every instance reports the same log head and has applied it. */
const sameHead = (d: PartitionedDeployment) =>
  waitFor(
    "every instance to report the same log head, applied",
    async () => {
      const ready = await Promise.all(d.instances.map(readiness))
      const heads = ready.map((r) => r?.log?.head)
      return heads[0] !== undefined && heads.every((h) => h === heads[0]) && ready.every((r) => r?.projections?.applied === r?.log?.head)
    },
    { timeoutMs: 30_000, everyMs: 250 },
  )

const readLog = async (d: PartitionedDeployment): Promise<Array<StreamMessage>> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readStream(d.natsUrl)
    } catch (error) {
      if (attempt >= 10) throw error
      await sleep(1_000)
    }
  }
}

const replay = (d: PartitionedDeployment, instance: Instance) => {
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_DATA_DIR: instance.dataDir, NATS_URL: d.natsUrl }
  delete env.SLUICE_NATS_REPLICAS
  return runToEnd(process.execPath, ["bin/replay.mjs"], { env, cwd: projectRoot })
}

/**
 * What must hold once a partition has healed, each checked softly so one run reports every failure:
 * every batch final within `finalWithinMs` of the heal, each row's result stored once and read the same
 * through every instance, no more than SLOTS requests of a model at the upstream at once, the replicas
 * equal, `npm run replay` equal twice over each instance's read model. Answers the figures measured.
 */
export const checkAfterHeal = async (
  d: PartitionedDeployment,
  load: BatchLoad,
  times: FaultTimes,
  { finalWithinMs = 60_000 }: { readonly finalWithinMs?: number } = {},
): Promise<Figures> => {
  const deadline = times.healedAt + finalWithinMs
  const batches = await withTimeout("every create to be answered after the heal", load.created(), finalWithinMs)
  const seenFinal = await finals(d, batches, deadline)
  const unfinished = batches.filter((b) => !seenFinal.has(b.id))
  if (unfinished.length > 0) {
    const views = await Promise.all(
      unfinished.map(async (b) => `${b.label} ${b.id}: ${(await Promise.all(d.instances.map(async (i) => `${i.name} ${JSON.stringify(await readBatch(i, b.id))}`))).join(" | ")}`),
    )
    expect.soft(
      unfinished.map((b) => b.label),
      `batches not final ${finalWithinMs} ms after the heal:\n${views.join("\n")}\n${d.instances.map((i) => `--- ${i.name}:\n${logExcerpt(i)}`).join("\n")}`,
    ).toEqual([])
  }
  const finalAfterHealMs = unfinished.length === 0 ? Math.max(0, ...seenFinal.values()) - times.healedAt : undefined

  const headsAgree = await sameHead(d).then(
    () => true,
    (e: unknown) => (expect.soft(String(e), "the instances' /readyz").toBe("the same log head, applied"), false),
  )
  if (headsAgree) {
    for (const b of batches) {
      const views = await Promise.all(
        d.instances.map(async (i) => ({ batch: await readBatch(i, b.id), results: await client(i.url).allResults(b.id).catch((e: unknown) => String(e)) })),
      )
      const [first, ...others] = views
      for (const [k, other] of others.entries()) expect.soft(other, `${b.label} through ${d.instances[k + 1]!.name} and ${d.instances[0]!.name}`).toEqual(first)
      expect.soft(first!.batch.status, `${b.label} ${b.id}`).toBe("completed")
      expect.soft(first!.batch.request_counts, `${b.label} ${b.id}`).toEqual({ total: b.total, completed: b.total, failed: 0 })
      const results = Array.isArray(first!.results) ? first!.results : []
      const ids = results.map((r: any) => r.custom_id as string)
      expect.soft(ids, `${b.label}: each custom_id exactly once, in order`).toEqual(Array.from({ length: b.total }, (_, i) => `${b.label}-${i}`))
      const wrong = results.filter((r: any, i: number) => r.status !== "completed" || !String(r.response?.body?.choices?.[0]?.message?.content).includes(rowContent(b.label, i)))
      expect.soft(wrong.map((r: any) => r.custom_id), `${b.label}: results not completed with their own answer`).toEqual([])
    }
  }

  const maxInFlight: Record<string, number> = {}
  const upstreamRepeats: Record<string, number> = {}
  for (const model of MODELS) {
    const stats = d.sims.get(model)!.stats()
    maxInFlight[model] = stats.maxInFlight
    upstreamRepeats[model] = stats.received - batches.reduce((n, b) => n + (b.rows.get(model) ?? 0), 0)
    expect.soft(stats.maxInFlight, `${model}: requests at the upstream at once`).toBeLessThanOrEqual(SLOTS)
  }

  // The checks below read the log and each replica: they wait for the cluster to settle after the heal.
  expect.soft(await streamSettled(d.nats), "every node names one meta leader and one leader of SLUICE, which sees every replica current").toBe(true)
  const log = await readLog(d)
  const windows = laneWindows(log)
  const lifecycle = lifecycleEvents(log)
  let rowsStartedAgain = 0
  for (const b of batches) {
    const terminals = Array.from({ length: b.total }, () => 0)
    const starts = Array.from({ length: b.total }, () => 0)
    for (const w of windows.filter((w) => w.batchId === b.id)) {
      for (const e of w.events) {
        if (e.type === "row_started") starts[e.row]!++
        if (e.type === "row_completed" || e.type === "row_failed" || e.type === "row_cancelled") terminals[e.row]!++
      }
    }
    rowsStartedAgain += starts.filter((n) => n > 1).length
    const notOnce = terminals.flatMap((n, row) => (n === 1 ? [] : [`row ${row}: ${n}`]))
    expect.soft(notOnce, `${b.label} ${b.id}: rows whose settle the log holds other than once`).toEqual([])
    const orphans = settlesWithoutStart(windows.filter((w) => w.batchId === b.id).flatMap((w) => w.events.map((e) => ({ ...e, seq: w.seq }))))
    expect.soft(orphans, `${b.label} ${b.id}: settles the log holds before their start`).toEqual([])
    const finalEvents = (lifecycle.get(b.id) ?? []).filter((t) => ["batch_completed", "batch_failed", "batch_expired", "batch_cancelled"].includes(t))
    expect.soft(finalEvents, `${b.label} ${b.id}: final events in the log`).toEqual(["batch_completed"])
  }
  // Fencing: on each lane, no window of an older lease follows one of a newer lease.
  const newest = new Map<string, LaneWindowLease>()
  const fenced: Array<string> = []
  for (const w of windows) {
    const lane = `${w.batchId}/${w.model}`
    const before = newest.get(lane)
    if (before !== undefined && w.lease < before.lease) fenced.push(`${lane}: seq ${w.seq} lease ${w.lease} (${w.owner}) after lease ${before.lease} (${before.owner})`)
    if (before === undefined || w.lease > before.lease) newest.set(lane, { lease: w.lease, owner: w.owner })
  }
  expect.soft(fenced, "windows of an older lease after a newer one").toEqual([])
  const failoverMs: Record<string, number | undefined> = {}
  for (const model of MODELS) {
    const owner = times.leasesAtCut.find((l) => l.model === model)?.owner
    const first = windows.find((w) => w.model === model && w.owner !== owner && w.at >= times.cutAt && w.events.some((e) => e.type === "row_started"))
    failoverMs[model] = first === undefined ? undefined : first.at - times.cutAt
  }

  const states = await replicaStates(d.nats)
  expect.soft(new Set(Object.values(states).map((s) => JSON.stringify(s))).size, `replica states per node: ${JSON.stringify(states)}`).toBe(1)
  expect.soft(Object.values(states).every((s) => s !== undefined), `replica states per node: ${JSON.stringify(states)}`).toBe(true)
  for (const round of [1, 2]) {
    for (const instance of d.instances) {
      const out = await replay(d, instance)
      expect.soft(out.stdout, `npm run replay (${round}) over ${instance.name}'s read model:\n${out.stdout}${out.stderr}`).toMatch(/^result\s+equal/m)
      expect.soft(out.code, `npm run replay (${round}) over ${instance.name}: exit status`).toBe(0)
    }
  }

  const digests = await digestsPerLeader(d.nats).catch((e: unknown) => ({ error: String(e) }) as Record<string, string>)
  expect.soft(Object.keys(digests).sort(), `stream digests read from each node as leader: ${JSON.stringify(digests)}`).toEqual(d.nats.map((n) => n.name))
  expect.soft(new Set(Object.values(digests)).size, `stream digests read from each node as leader: ${JSON.stringify(digests)}`).toBe(1)

  return {
    failoverMs,
    upstreamRepeats,
    rowsStartedAgain,
    maxInFlight,
    finalAfterHealMs,
    batches: batches.length,
    createRetries: [...load.retries.values()].reduce((a, b) => a + b, 0),
    replicasRead: Object.keys(digests).filter((k) => k !== "error").length,
  }
}

interface LaneWindowLease {
  readonly lease: number
  readonly owner: string
}

/** One line per scenario for the docs to quote. */
export const summary = (scenario: string, d: PartitionedDeployment, figures: Figures, extra: Record<string, unknown> = {}): string =>
  `partition ${scenario} nats-server=${d.release} ` +
  Object.entries({
    failover_ms: figures.failoverMs,
    final_after_heal_ms: figures.finalAfterHealMs,
    upstream_repeats: figures.upstreamRepeats,
    rows_started_again: figures.rowsStartedAgain,
    max_in_flight: figures.maxInFlight,
    batches: figures.batches,
    create_retries: figures.createRetries,
    replicas_read: figures.replicasRead,
    ...extra,
  })
    .map(([k, v]) => `${k}=${typeof v === "object" && v !== null ? Object.entries(v).map(([m, n]) => `${m}:${n ?? "none"}`).join(",") : (v ?? "none")}`)
    .join(" ")
