import { once } from "node:events"
import { createReadStream, createWriteStream, writeFileSync } from "node:fs"
import http from "node:http"
import { join } from "node:path"
import OpenAI, { toStreamingFile } from "openai"
import type { Context } from "../context.js"
import { cpuMs } from "../cpuTime.js"
import { type Backend, type Figure, atLeast, atMost, figure } from "../figures.js"
import { BENCH_KEY, MODELS, highWaterMb, residentMb, startNats, startSluice, tempDir } from "../processes.js"
import type { Scenario } from "../scenario.js"
import { type SluiceApi, sluiceApi } from "../sluiceApi.js"
import { median, ratios } from "../stats.js"

const MB = 1_000_000
const RSS_EVERY_MS = 50
const NEWLINE = 10

const PROSE =
  "Summarize the following passage in two sentences, keeping every named entity and number exactly as written. " +
  "The committee met on a Tuesday to review the quarterly figures, the backlog of open tickets, the hiring plan "

/** One chat row of OpenAI's batch file format, padded with prose to exactly `bytes` bytes with its newline. */
const line = (i: number, bytes: number) => {
  const row = (content: string) =>
    JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/chat/completions", body: { model: MODELS.fast, messages: [{ role: "user", content }], max_tokens: 8 } })
  const head = `Item ${i}. `
  const pad = bytes - 1 - row(head).length
  if (pad < 0) throw new Error(`a line of ${bytes} bytes cannot hold row ${i}`)
  return `${row(head + PROSE.repeat(Math.ceil(pad / PROSE.length) + 1).slice(0, pad))}\n`
}

/** The input file, written to disk as it is made, a thousand lines at a time; answers its size. */
const writeInput = async (path: string, lines: number, bytes: number): Promise<number> => {
  const out = createWriteStream(path)
  const each = Math.floor(bytes / lines)
  for (let i = 0; i < lines; i += 1000) {
    let block = ""
    for (let j = i; j < Math.min(lines, i + 1000); j++) block += line(j, each)
    if (!out.write(block)) await once(out, "drain")
  }
  out.end()
  await once(out, "finish")
  return each * lines
}

/**
 * The largest resident set sampled every RSS_EVERY_MS until `stop`, and the kernel's high-water mark
 * since the start, when it could be reset (writing 5 to clear_refs sets VmHWM to the current RSS).
 */
const peakRss = (pid: number) => {
  let reset = true
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
  } catch {
    reset = false
  }
  let peak = residentMb(pid)
  const timer = setInterval(() => (peak = Math.max(peak, residentMb(pid))), RSS_EVERY_MS)
  return {
    /** The largest sample so far. */
    peakMb: () => Math.max(peak, residentMb(pid)),
    stop: () => {
      clearInterval(timer)
      peak = Math.max(peak, residentMb(pid))
      return { sampledMb: peak, highWaterMb: reset ? highWaterMb(pid) : Number.NaN }
    },
  }
}

/** GET a file's content with node:http, reading it as it arrives and keeping nothing but its size and its lines. */
const download = (url: string): Promise<{ readonly bytes: number; readonly lines: number; readonly first: string }> =>
  new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${BENCH_KEY}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`GET ${url}: ${res.statusCode}`))
        return
      }
      let bytes = 0
      let lines = 0
      let first = ""
      res.on("data", (chunk: Buffer) => {
        if (first.length < 1000) first += chunk.subarray(0, 1000).toString("utf8")
        bytes += chunk.length
        for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) lines++
      })
      res.on("error", reject)
      res.on("end", () => resolve({ bytes, lines, first: first.slice(0, first.indexOf("\n")) }))
    })
    req.on("error", reject)
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Each trial reads the output file and the same batch's results.jsonl this many times, in turns. */
const READS = 3

interface Input {
  readonly path: string
  readonly bytes: number
  readonly lines: number
}

interface Trial {
  readonly uploadMbPerS: number
  readonly uploadCpuMsPerMb: number
  readonly createS: number
  readonly createCpuMsPerMb: number
  readonly idleMb: number
  readonly uploadGrowthMb: number
  readonly sampledGrowthMb: number
  readonly highWaterGrowthMb: number
  readonly rowsPerS: number
  readonly outputMb: number
  readonly downloadMbPerS: number
  readonly downloadCpuMsPerMb: number
  readonly resultsMbPerS: number
  readonly resultsCpuMsPerMb: number
}

/** A download read whole, timed, with the Sluice process's CPU over it. */
const timedDownload = async (url: string, pid: number) => {
  const cpu = cpuMs(pid)
  const t0 = performance.now()
  const got = await download(url)
  const s = (performance.now() - t0) / 1000
  return { ...got, mbPerS: got.bytes / MB / s, cpuMsPerMb: (cpuMs(pid) - cpu) / (got.bytes / MB) }
}

const trial = async (url: string, api: SluiceApi, pid: number, input: Input): Promise<Trial> => {
  const openai = new OpenAI({ apiKey: BENCH_KEY, baseURL: `${url}/v1`, maxRetries: 0, timeout: 600_000 })
  const mb = input.bytes / MB
  // Idle: the smallest of a few readings, once the start-up's work has settled.
  await sleep(2_000)
  let idleMb = residentMb(pid)
  for (let i = 0; i < 5; i++, await sleep(100)) idleMb = Math.min(idleMb, residentMb(pid))
  const rss = peakRss(pid)
  const cpu0 = cpuMs(pid)
  const t0 = performance.now()
  const file = await openai.files.create({ file: toStreamingFile(createReadStream(input.path), "b17.jsonl"), purpose: "batch" })
  const t1 = performance.now()
  const cpu1 = cpuMs(pid)
  const uploadPeakMb = rss.peakMb()
  if (file.bytes !== input.bytes) throw new Error(`the upload stored ${file.bytes} bytes of ${input.bytes}`)
  const batch = await openai.batches.create({ input_file_id: file.id, endpoint: "/v1/chat/completions", completion_window: "24h" })
  const t2 = performance.now()
  const cpu2 = cpuMs(pid)
  const peak = rss.stop()
  const done = await api.waitFinal(batch.id, 500, 1_800_000)
  if (done.batch.status !== "completed" || done.batch.request_counts.completed !== input.lines) {
    throw new Error(`the batch ended ${done.batch.status} with ${JSON.stringify(done.batch.request_counts)}`)
  }
  const final = await openai.batches.retrieve(batch.id)
  if (typeof final.output_file_id !== "string") throw new Error(`the completed batch names no output file: ${JSON.stringify(final)}`)
  await sleep(1_000)
  const outputs: Array<Awaited<ReturnType<typeof timedDownload>>> = []
  const results: Array<Awaited<ReturnType<typeof timedDownload>>> = []
  for (let i = 0; i < READS; i++) {
    outputs.push(await timedDownload(`${url}/v1/files/${final.output_file_id}/content`, pid))
    results.push(await timedDownload(`${url}/v1/batches/${batch.id}/results.jsonl`, pid))
  }
  for (const output of outputs) {
    if (output.lines !== input.lines || !output.first.includes('"custom_id":"r0"')) {
      throw new Error(`the output file holds ${output.lines} lines of ${input.lines}, the first ${output.first.slice(0, 200)}`)
    }
  }
  const mid = <A>(values: ReadonlyArray<A>, f: (a: A) => number) => median(values.map(f))
  return {
    uploadMbPerS: mb / ((t1 - t0) / 1000),
    uploadCpuMsPerMb: (cpu1 - cpu0) / mb,
    createS: (t2 - t1) / 1000,
    createCpuMsPerMb: (cpu2 - cpu1) / mb,
    idleMb,
    uploadGrowthMb: uploadPeakMb - idleMb,
    sampledGrowthMb: peak.sampledMb - idleMb,
    highWaterGrowthMb: peak.highWaterMb - idleMb,
    rowsPerS: input.lines / ((done.at - t2) / 1000),
    outputMb: outputs[0]!.bytes / MB,
    downloadMbPerS: mid(outputs, (o) => o.mbPerS),
    downloadCpuMsPerMb: mid(outputs, (o) => o.cpuMsPerMb),
    resultsMbPerS: mid(results, (o) => o.mbPerS),
    resultsCpuMsPerMb: mid(results, (o) => o.cpuMsPerMb),
  }
}

/** Each trial on a Sluice of its own (and on NATS a nats-server of its own): its RSS before the upload is a fresh process's. */
const measure = async (ctx: Context, backend: Backend, input: Input): Promise<Array<Figure>> => {
  const sim = await ctx.sim(0)
  const trials: Array<Trial> = []
  for (let t = 0; t < ctx.sizes.trials; t++) {
    const nats = backend === "nats" ? await startNats() : undefined
    const sluice = await startSluice({ models: [{ id: MODELS.fast, upstream_url: sim.url, batch_concurrency: ctx.sizes.slots }], ...(nats === undefined ? {} : { natsUrl: nats.url }) })
    const api = sluiceApi(sluice.url)
    try {
      const r = await trial(sluice.url, api, sluice.pid, input)
      trials.push(r)
      ctx.progress(
        `B17 ${backend} trial ${t + 1}: upload ${r.uploadMbPerS.toFixed(1)} MB/s (CPU ${r.uploadCpuMsPerMb.toFixed(1)} ms/MB), create ${r.createS.toFixed(2)} s (CPU ${r.createCpuMsPerMb.toFixed(1)} ms/MB), ` +
          `RSS ${r.idleMb.toFixed(0)} MB idle, +${r.uploadGrowthMb.toFixed(0)} MB in the upload, +${r.sampledGrowthMb.toFixed(0)} MB to the create's answer, +${r.highWaterGrowthMb.toFixed(0)} MB VmHWM; ${r.rowsPerS.toFixed(0)} rows/s to final; ` +
          `output ${r.outputMb.toFixed(1)} MB at ${r.downloadMbPerS.toFixed(0)} MB/s (CPU ${r.downloadCpuMsPerMb.toFixed(1)} ms/MB), results.jsonl at ${r.resultsMbPerS.toFixed(0)} MB/s (CPU ${r.resultsCpuMsPerMb.toFixed(1)} ms/MB)`,
      )
    } finally {
      api.close()
      await sluice.stop()
      await nats?.stop()
    }
  }
  const of = (k: keyof Trial) => trials.map((r) => r[k])
  const scenario = `a ${(input.bytes / MB).toFixed(0)} MB, ${input.lines.toLocaleString("en")}-line file: upload, batch from it (sim 0 ms), output file`
  return [
    figure({ id: "B17", scenario, backend, figure: "upload (MB/s)", samples: of("uploadMbPerS"), digits: 1 }),
    figure({ id: "B17", scenario, backend, figure: "Sluice CPU ms per MB uploaded", samples: of("uploadCpuMsPerMb"), digits: 1 }),
    figure({ id: "B17", scenario, backend, figure: "create from the file (s)", samples: of("createS"), digits: 2 }),
    figure({ id: "B17", scenario, backend, figure: "Sluice CPU ms per MB of the create", samples: of("createCpuMsPerMb"), digits: 1 }),
    figure({ id: "B17", scenario, backend, figure: "Sluice RSS before the upload, a fresh process (MB)", samples: of("idleMb") }),
    figure({ id: "B17", scenario, backend, figure: "peak RSS over it during the upload, sampled every 50 ms (MB)", samples: of("uploadGrowthMb") }),
    figure({ id: "B17", scenario, backend, figure: "peak RSS over it, upload and create, sampled every 50 ms (MB)", samples: of("sampledGrowthMb"), target: atMost(150) }),
    figure({ id: "B17", scenario, backend, figure: "peak RSS over it, upload and create, VmHWM (MB)", samples: of("highWaterGrowthMb") }),
    figure({ id: "B17", scenario, backend, figure: "rows/s from the create's answer to final", samples: of("rowsPerS") }),
    figure({ id: "B17", scenario, backend, figure: "output file download (MB/s)", samples: of("downloadMbPerS"), target: atLeast(100) }),
    figure({ id: "B17", scenario, backend, figure: "Sluice CPU ms per MB of the output file", samples: of("downloadCpuMsPerMb"), digits: 1 }),
    figure({ id: "B17", scenario, backend, figure: "baseline: the batch's results.jsonl (MB/s)", samples: of("resultsMbPerS") }),
    figure({ id: "B17", scenario, backend, figure: "Sluice CPU ms per MB of results.jsonl", samples: of("resultsCpuMsPerMb"), digits: 1 }),
    figure({ id: "B17", scenario, backend, figure: "output file ÷ results.jsonl (MB/s)", samples: ratios(of("downloadMbPerS"), of("resultsMbPerS")), digits: 2 }),
  ]
}

/** The file-based batch flow as OpenAI's tools drive it, at the size issue 25 names. */
export const b17FileBatch: Scenario = {
  id: "B17",
  title: "a 200 MB file uploaded, a batch created from it, run, and its output file downloaded",
  uses: [],
  run: async (ctx) => {
    const { b17Lines, b17Bytes } = ctx.sizes
    const scratch = tempDir("sluice-bench-b17-")
    try {
      const path = join(scratch.path, "b17.jsonl")
      const bytes = await writeInput(path, b17Lines, b17Bytes)
      const input = { path, bytes, lines: b17Lines }
      ctx.progress(`B17: ${(bytes / MB).toFixed(1)} MB of ${b17Lines} lines written to ${path}`)
      const embedded = await measure(ctx, "embedded", input)
      const onNats = await measure(ctx, "nats", input)
      return {
        figures: [...embedded, ...onNats],
        notes: [
          `B17: a JSONL file of ${b17Lines.toLocaleString("en")} chat rows for ${MODELS.fast} (the shared 0 ms simulator, ${ctx.sizes.slots} slots), each line ${Math.floor(b17Bytes / b17Lines)} bytes, written to disk first. ` +
            "Each trial on a Sluice process of its own (as `npm start` runs it; on NATS with a nats-server of its own), so that its RSS before the upload is a fresh process's: " +
            "the official openai package's files.create with toStreamingFile(fs.createReadStream(path)) (multipart, chunked, read from disk as it is sent), " +
            "then batches.create({input_file_id, endpoint, completion_window: '24h'}), which reads and checks every line before it answers; the batch is polled every 500 ms until final. " +
            `Then its output file (GET /v1/files/{output_file_id}/content) and, as a baseline read from the same results, its results.jsonl are each read ${READS} times in turns with node:http, counted as they arrive and not kept; each trial's figure is the median of its reads. ` +
            `RSS: the Sluice process's VmRSS from /proc every ${RSS_EVERY_MS} ms from the upload's start to the create's answer, less its smallest of five readings just before; VmHWM is the kernel's high-water mark over the same span (reset through clear_refs). ` +
            "CPU is the Sluice process's (all threads, /proc, 10 ms ticks) over each call, per MB (10^6 bytes) of the file or of what was read.",
        ],
      }
    } finally {
      await scratch.remove()
    }
  },
}
