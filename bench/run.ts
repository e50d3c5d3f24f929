/**
 * The benchmark suite (issue 5): `npm run bench [-- --quick] [-- --only B2,B5]`.
 * Starts its own simulators, nats-servers and Sluice processes, prints a table and writes
 * bench/results/latest.json. Every ratio pairs trials measured next to each other in this run.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { makeContext } from "./context.js"
import type { Figure, Skipped } from "./figures.js"
import { cleanupAll, cleanupOnSignals, repoRoot } from "./processes.js"
import type { Scenario } from "./scenario.js"
import { b1Create } from "./scenarios/b1Create.js"
import { b2Throughput } from "./scenarios/b2Throughput.js"
import { b2sStubUpstream } from "./scenarios/b2sStubUpstream.js"
import { b3Utilization } from "./scenarios/b3Utilization.js"
import { b4Fairness } from "./scenarios/b4Fairness.js"
import { b5Reads } from "./scenarios/b5Reads.js"
import { b6Rebuild } from "./scenarios/b6Rebuild.js"
import { b7Memory } from "./scenarios/b7Memory.js"
import { b8BullMq } from "./scenarios/b8BullMq.js"
import { b9MetricsCost } from "./scenarios/b9MetricsCost.js"
import { b10EtaAccuracy } from "./scenarios/b10EtaAccuracy.js"
import { b11ChainCost } from "./scenarios/b11ChainCost.js"
import { b12ReadersDuringDispatch } from "./scenarios/b12ReadersDuringDispatch.js"
import { b12sClosedLoopReaders } from "./scenarios/b12sClosedLoopReaders.js"
import { b13DeepQueue } from "./scenarios/b13DeepQueue.js"
import { b14ScaleOut } from "./scenarios/b14ScaleOut.js"
import { b15FeedLatency } from "./scenarios/b15FeedLatency.js"
import { b16FlexLatency } from "./scenarios/b16FlexLatency.js"
import { b17FileBatch } from "./scenarios/b17FileBatch.js"
import { b18Priorities } from "./scenarios/b18Priorities.js"
import { b19Transport } from "./scenarios/b19Transport.js"
import { renderTable } from "./table.js"

const USAGE = `Usage: npm run bench [-- --quick] [-- --only B1,B5]

  --quick      a small version of every scenario, one trial each (a smoke check, under a minute)
  --only IDS   only these scenarios (and those whose results they reuse: B5 needs B1, B8 needs B2)
  --trials N   trials per figure instead of 3 (1 with --quick), e.g. for profiling one scenario
  -h, --help   this text

Needs nats-server (on PATH or /usr/sbin/nats-server); B8 needs Redis on 127.0.0.1:6379.
Writes bench/results/latest.json.`

// The order shares work: B5 reads B1's batch, B1–B5, B9 and B16 share one Sluice, B8 pairs with B2.
// B2s and B12s share the two Sluices on the stub upstream (stub, stubNats).
const ORDER: ReadonlyArray<Scenario> = [b1Create, b5Reads, b3Utilization, b4Fairness, b10EtaAccuracy, b2Throughput, b9MetricsCost, b8BullMq, b2sStubUpstream, b12ReadersDuringDispatch, b12sClosedLoopReaders, b16FlexLatency, b15FeedLatency, b17FileBatch, b18Priorities, b19Transport, b11ChainCost, b14ScaleOut, b7Memory, b13DeepQueue, b6Rebuild]

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    only: { type: "string" },
    trials: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
  strict: true,
})
if (values.help) {
  console.log(USAGE)
  process.exit(0)
}

const selected = (only: string | undefined): ReadonlyArray<Scenario> => {
  if (only === undefined) return ORDER
  const wanted = new Set(only.split(",").map((s) => s.trim().toUpperCase()).filter((s) => s !== ""))
  const unknown = [...wanted].filter((id) => !ORDER.some((s) => s.id.toUpperCase() === id))
  if (unknown.length > 0) {
    console.error(`unknown scenario ${unknown.join(", ")}\n\n${USAGE}`)
    process.exit(2)
  }
  for (const s of ORDER) if (wanted.has(s.id.toUpperCase())) for (const r of s.requires ?? []) wanted.add(r.toUpperCase())
  return ORDER.filter((s) => wanted.has(s.id.toUpperCase()))
}

const started = performance.now()
const loadAtStart = os.loadavg().map((l) => +l.toFixed(2))
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0).padStart(4)} s`
const progress = (line: string) => console.error(`[${elapsed()}] ${line}`)

const git = (...args: Array<string>) => {
  try {
    return execFileSync("git", args, { cwd: repoRoot, encoding: "utf8" }).trim()
  } catch {
    return undefined
  }
}

const scenarios = selected(values.only)
const trials = values.trials === undefined ? undefined : Number(values.trials)
if (trials !== undefined && !(Number.isInteger(trials) && trials >= 1)) {
  console.error(`--trials must be a positive integer\n\n${USAGE}`)
  process.exit(2)
}
const ctx = makeContext(values.quick, progress, trials)
const figures: Array<Figure> = []
const notes: Array<string> = []
const skipped: Array<Skipped> = []
const seconds: Record<string, number> = {}
let failed = false
cleanupOnSignals()
// Sluice runs from its bundle, as `npm start` does: build it from the sources being measured.
execFileSync(process.execPath, [join(repoRoot, "bin/build.mjs")], { stdio: "inherit" })
progress(`${values.quick ? "quick run" : "full run"}: ${scenarios.map((s) => s.id).join(", ")}; ${ctx.sizes.trials} trial(s) per figure`)
try {
  const uses = new Set(scenarios.flatMap((s) => s.uses))
  await Promise.all([...uses].map((which) => ctx.sluice(which)))
  for (const [i, scenario] of scenarios.entries()) {
    const reason = await scenario.skipReason?.()
    if (reason !== undefined) {
      progress(`${scenario.id} skipped: ${reason}`)
      skipped.push({ id: scenario.id, reason })
    } else {
      progress(`${scenario.id}: ${scenario.title}`)
      const t0 = performance.now()
      try {
        const result = await scenario.run(ctx)
        figures.push(...result.figures)
        notes.push(...result.notes)
        seconds[scenario.id] = +((performance.now() - t0) / 1000).toFixed(1)
        progress(`${scenario.id} took ${seconds[scenario.id]} s`)
      } catch (error) {
        failed = true
        const message = error instanceof Error ? error.message : String(error)
        progress(`${scenario.id} failed: ${message}`)
        skipped.push({ id: scenario.id, reason: `failed: ${message.split("\n")[0]}` })
      }
    }
    for (const which of uses) if (!scenarios.slice(i + 1).some((s) => s.uses.includes(which))) await ctx.release(which)
  }
} finally {
  await cleanupAll()
}

const wallSeconds = (performance.now() - started) / 1000
const machine = {
  cpus: os.cpus().length,
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  memoryGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
  loadAverageAtStart: loadAtStart,
  loadAverageAtEnd: os.loadavg().map((l) => +l.toFixed(2)),
  node: process.version,
  platform: `${os.platform()} ${os.release()}`,
}
const report = {
  date: new Date().toISOString(),
  commit: git("rev-parse", "HEAD") ?? "unknown",
  // The figures are of the working tree, which may differ from the commit.
  uncommittedChanges: (git("status", "--porcelain") ?? "") !== "",
  mode: values.quick ? "quick" : "full",
  trials: ctx.sizes.trials,
  wallSeconds: +wallSeconds.toFixed(1),
  scenarioSeconds: seconds,
  machine,
  sizes: ctx.sizes,
  figures: figures.map(({ samples, ...f }) => ({ ...f, samples })),
  skipped,
  notes,
}
const resultsDir = join(repoRoot, "bench", "results")
mkdirSync(resultsDir, { recursive: true })
writeFileSync(join(resultsDir, "latest.json"), `${JSON.stringify(report, null, 2)}\n`)

console.log(renderTable(figures, skipped))
console.log()
for (const note of notes) console.log(`- ${note}`)
console.log(
  `\n${report.mode} run: ${wallSeconds.toFixed(0)} s wall (${Object.entries(seconds).map(([id, s]) => `${id} ${s.toFixed(0)} s`).join(", ")}), ${ctx.sizes.trials} trial(s) per figure (median, min, max); ` +
    `${machine.cpus} CPUs, node ${machine.node}, load average ${machine.loadAverageAtStart.join(" ")} at start, ${machine.loadAverageAtEnd.join(" ")} at end, commit ${report.commit.slice(0, 12)}. ` +
    "Written to bench/results/latest.json.",
)
process.exit(failed ? 1 : 0)
