// Node's GC pauses of the process it is loaded into, for the loop-delay question (B12d):
// BENCH_SLUICE_NODE_ARGS="--import ./bench/gcPauses.mjs" npm run bench -- --only B2s --trials 1
// writes every pause as [kind, ms, start ms] to $GC_PAUSES_DIR (default /tmp)/gc.<pid>.json every 2 s,
// and `node bench/gcPauses.mjs FILE…` sums them by kind.
import { readFileSync, writeFileSync } from "node:fs"
import { PerformanceObserver, constants } from "node:perf_hooks"
import { isMainThread } from "node:worker_threads"

const summarize = (files) => {
  for (const file of files) {
    const byKind = {}
    for (const [kind, ms] of JSON.parse(readFileSync(file, "utf8"))) (byKind[kind] ??= []).push(ms)
    for (const [kind, ms] of Object.entries(byKind)) {
      ms.sort((a, b) => a - b)
      const at = (q) => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))]
      const sum = ms.reduce((a, b) => a + b, 0)
      console.log(`${file} ${kind}: ${ms.length} pauses, ${sum.toFixed(0)} ms in all, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${ms[ms.length - 1]} ms, over 10 ms ${ms.filter((m) => m > 10).length}`)
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
    for (const e of list.getEntries()) pauses.push([kinds[e.detail?.kind] ?? "other", +e.duration.toFixed(2), Math.round(e.startTime)])
  }).observe({ entryTypes: ["gc"] })
  const file = `${process.env.GC_PAUSES_DIR ?? "/tmp"}/gc.${process.pid}.json`
  setInterval(() => writeFileSync(file, JSON.stringify(pauses)), 2000).unref()
}
