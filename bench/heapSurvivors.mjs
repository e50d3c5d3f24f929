// What a process allocates that outlives a scavenge, by the code that allocated it, for the loop-delay
// and CPU questions (B12d, B2c): each scavenge copies what is alive in the young generation and
// promotes what has been twice, so the main thread's scavenges cost what the row path keeps alive
// across them. V8's sampling heap profiler, told to drop the samples a scavenge collected but keep
// those a major GC did, reports what survived at least one scavenge, whether it died later or not.
//   BENCH_SLUICE_NODE_ARGS="--import ./bench/heapSurvivors.mjs" npm run bench:probe -- threads --batches 2
// writes the profile to $HEAP_SURVIVORS_DIR (default /tmp)/survivors.<pid>.heapprofile every 5 s, and
// `node bench/heapSurvivors.mjs FILE [N]` prints the N functions (default 25) whose allocations
// survived most, by their own and by what they called.
import { readFileSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { isMainThread } from "node:worker_threads"

const summarize = (file, top) => {
  const { head } = JSON.parse(readFileSync(file, "utf8"))
  const self = new Map()
  const total = new Map()
  let all = 0
  const label = (f) => `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|dist|node_modules)\//, "$1/")}:${f.lineNumber + 1}`
  const walk = (node, above) => {
    const name = label(node.callFrame)
    const own = node.selfSize
    all += own
    self.set(name, (self.get(name) ?? 0) + own)
    const here = new Set(above).add(name)
    let sum = own
    for (const child of node.children) sum += walk(child, here)
    // Counted once per stack, however deep it recurses.
    if (!above.has(name)) total.set(name, (total.get(name) ?? 0) + sum)
    return sum
  }
  walk(head, new Set())
  const list = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, bytes]) => `${(bytes / 1e6).toFixed(1).padStart(8)} MB ${((100 * bytes) / all).toFixed(1).padStart(5)} %  ${name}`)
      .join("\n")
  console.log(`${file}: ${(all / 1e6).toFixed(1)} MB sampled that outlived a scavenge\n== by the function that allocated it\n${list(self)}\n== by what it called too\n${list(total)}`)
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split("/").pop()) && process.argv.length > 2) {
  summarize(process.argv[2], Number(process.argv[3] ?? 25))
} else if (isMainThread) {
  const session = new Session()
  session.connect()
  session.post("HeapProfiler.startSampling", {
    samplingInterval: 16 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: false,
  })
  const file = `${process.env.HEAP_SURVIVORS_DIR ?? "/tmp"}/survivors.${process.pid}.heapprofile`
  setInterval(
    () =>
      session.post("HeapProfiler.getSamplingProfile", (error, result) => {
        if (error === null) writeFileSync(file, JSON.stringify(result.profile))
      }),
    5000,
  ).unref()
}
