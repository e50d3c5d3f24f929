// Node's GC pauses of the process it is loaded into, for the loop-delay question (B12d):
// BENCH_SLUICE_NODE_ARGS="--import ./bench/gcPauses.mjs" npm run bench -- --only B2s --trials 1
// writes every pause as [kind, ms, start ms, new space MB, old space MB] (the spaces' use when the
// observer's callback runs, which can be after more allocation: the new space's is an upper bound) to $GC_PAUSES_DIR (default /tmp)/gc.<pid>.json every 2 s, and
// `node bench/gcPauses.mjs FILE…` sums them by kind, with at most what a scavenge leaves in the new space and
// what the old space gains from one scavenge to the next while no major GC runs between (what the
// scavenge promoted, and what was allocated there directly meanwhile). One observer callback may see
// several collections: the spaces are read once for them all.
import { readFileSync, writeFileSync } from "node:fs"
import { PerformanceObserver, constants } from "node:perf_hooks"
import { getHeapSpaceStatistics } from "node:v8"
import { isMainThread } from "node:worker_threads"

const summarize = (files) => {
  for (const file of files) {
    const byKind = {}
    const entries = JSON.parse(readFileSync(file, "utf8"))
    for (const [kind, ms] of entries) (byKind[kind] ??= []).push(ms)
    for (const [kind, ms] of Object.entries(byKind)) {
      ms.sort((a, b) => a - b)
      const at = (q) => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))]
      const sum = ms.reduce((a, b) => a + b, 0)
      console.log(`${file} ${kind}: ${ms.length} pauses, ${sum.toFixed(0)} ms in all, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${ms[ms.length - 1]} ms, over 10 ms ${ms.filter((m) => m > 10).length}`)
    }
    const minors = entries.filter(([kind, , , young]) => kind === "minor" && young !== undefined)
    const promoted = []
    for (let i = 1; i < minors.length; i++) {
      const between = entries.some(([kind, , start]) => kind === "major" && start > minors[i - 1][2] && start <= minors[i][2])
      const gained = minors[i][4] - minors[i - 1][4]
      // Only a major collection shrinks the old space: a fall is one whose entry came late.
      if (!between && gained >= 0) promoted.push(gained)
    }
    const mean = (xs) => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length)
    if (minors.length > 0) {
      console.log(`${file} minor: new space after, at most ${mean(minors.map((m) => m[3])).toFixed(1)} MB on average; old space gained ${mean(promoted).toFixed(1)} MB a scavenge on average (${promoted.length} without a major GC between)`)
    }
  }
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split("/").pop()) && process.argv.length > 2) summarize(process.argv.slice(2))
else if (isMainThread) {
  const kinds = {
    [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
    [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
  }
  const pauses = []
  new PerformanceObserver((list) => {
    const used = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, +(space.space_used_size / 1e6).toFixed(2)]))
    for (const e of list.getEntries()) {
      pauses.push([kinds[e.detail?.kind] ?? "other", +e.duration.toFixed(2), Math.round(e.startTime), used.new_space, used.old_space])
    }
  }).observe({ entryTypes: ["gc"] })
  const file = `${process.env.GC_PAUSES_DIR ?? "/tmp"}/gc.${process.pid}.json`
  setInterval(() => writeFileSync(file, JSON.stringify(pauses)), 2000).unref()
}
