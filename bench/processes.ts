import { type ChildProcess, fork, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { serverEnv } from "../src/config/serverEnv.js"
import type { PlainDone, PlainRun } from "./plainClientProcess.js"
import type { ReadersDone, ReadersStart, ReadersWarm } from "./readers.js"
import { type NatsServer, startNatsServer, stopProcess } from "../test/support/natsServer.js"
import { freePort } from "../test/support/ports.js"

export const repoRoot = fileURLToPath(new URL("..", import.meta.url))
export const BENCH_KEY = "sk-bench-bootstrap"
export const ADMIN_TOKEN = "bench-admin-token"

// Everything started is stopped from here, in reverse order, at the end or on a signal.
const cleanups: Array<() => Promise<void>> = []
const onCleanup = (stop: () => Promise<void>) => {
  cleanups.push(stop)
  return async () => {
    const at = cleanups.indexOf(stop)
    if (at >= 0) cleanups.splice(at, 1)
    await stop()
  }
}

export const cleanupAll = async (): Promise<void> => {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined)
}

export const cleanupOnSignals = (): void => {
  const handler = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping the processes the benchmark started`)
    void cleanupAll().finally(() => process.exit(130))
  }
  process.once("SIGINT", handler)
  process.once("SIGTERM", handler)
}

export const tempDir = (prefix: string): { readonly path: string; readonly remove: () => Promise<void> } => {
  const path = mkdtempSync(join(tmpdir(), prefix))
  const remove = onCleanup(async () => rmSync(path, { recursive: true, force: true }))
  return { path, remove }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface NodeProcess {
  readonly child: ChildProcess
  readonly tail: () => string
}

/** `node <args>` from the repository root, its output kept (the last 8 KiB) for error messages. */
const spawnNode = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv): NodeProcess => {
  const child = spawn(process.execPath, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8192))
  child.stdout?.on("data", keep)
  child.stderr?.on("data", keep)
  return { child, tail: () => output }
}

const waitUntilOk = async (url: string, started: NodeProcess, what: string, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (started.child.exitCode !== null) throw new Error(`${what} exited during start:\n${started.tail()}`)
    try {
      if ((await fetch(url)).ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      started.child.kill("SIGKILL")
      throw new Error(`${what} did not answer ${url} within ${timeoutMs / 1000} s:\n${started.tail()}`)
    }
    await sleep(50)
  }
}

export interface Started {
  readonly pid: number
  readonly stop: () => Promise<void>
}

export interface Sim extends Started {
  /** Base URL ending in /v1. */
  readonly url: string
  readonly latencyMs: number
}

/** The models every benchmark simulator serves: catalog ids equal upstream names, so Sluice forwards bodies unchanged. */
export const MODELS = { fast: "bench-fast", slow: "bench-slow", queued: "bench-queued", stub: "bench-stub" } as const

export { freePort }

export const simUrl = (port: number) => `http://127.0.0.1:${port}/v1`

/** The simulator as its own process (`src/sim/main.ts`), its concurrency far above any slot count here. */
export const startSim = async (latencyMs: number, port: number): Promise<Sim> => {
  const started = spawnNode(
    ["--import", "tsx", "src/sim/main.ts", "--port", String(port), "--latency-ms", String(latencyMs), "--concurrency", "4096", "--models", Object.values(MODELS).join(",")],
    { ...process.env },
  )
  const stop = onCleanup(() => stopProcess(started.child))
  await waitUntilOk(`http://127.0.0.1:${port}/health`, started, `simulator (${latencyMs} ms)`)
  return { pid: started.child.pid!, url: simUrl(port), latencyMs, stop }
}

/** The minimal stub upstream (bench/stubUpstream.ts) as its own process: every chat completion answered at once. */
export const startStub = async (port: number): Promise<Sim> => {
  const started = spawnNode(["--import", "tsx", "bench/stubUpstream.ts", "--port", String(port)], { ...process.env })
  const stop = onCleanup(() => stopProcess(started.child))
  await waitUntilOk(`http://127.0.0.1:${port}/health`, started, "stub upstream")
  return { pid: started.child.pid!, url: simUrl(port), latencyMs: 0, stop }
}

export interface CatalogEntry {
  readonly id: string
  readonly upstream_url: string
  /** The simulator's model name when the id is not one (several catalog models on one simulator). */
  readonly upstream_model?: string
  readonly batch_concurrency: number
}

export interface Sluice extends Started {
  readonly url: string
  readonly dataDir: string
  readonly backend: "embedded" | "nats"
}

/**
 * Sluice as a user runs it (`node bin/server.mjs`, what `npm start` runs), on a fresh data directory, with the
 * bootstrap key. `BENCH_SLUICE_NODE_ARGS` adds node flags to it alone, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
 */
export const startSluice = async (options: {
  readonly models: ReadonlyArray<CatalogEntry>
  readonly natsUrl?: string
  readonly env?: Readonly<Record<string, string>>
  /** The bench-only switch SLUICE_BENCH_WITHOUT_CHAIN (src/benchSwitches.ts): no hash-chain links. */
  readonly withoutChain?: boolean
}): Promise<Sluice> => {
  const dir = tempDir("sluice-bench-")
  const port = await freePort()
  const modelsPath = join(dir.path, "models.json")
  writeFileSync(modelsPath, JSON.stringify({ models: options.models }))
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...serverEnv,
    SLUICE_PORT: String(port),
    SLUICE_HOST: "127.0.0.1",
    SLUICE_DATA_DIR: dir.path,
    SLUICE_MODELS: modelsPath,
    SLUICE_BOOTSTRAP_KEY: BENCH_KEY,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
  }
  for (const name of ["NATS_URL", "SLUICE_TEST_CLOCK", "SLUICE_TEST_CLOCK_PORT", "SLUICE_TEST_CLOCK_START_MS", "SLUICE_MAX_UNFINISHED_BATCHES", "SLUICE_BENCH_WITHOUT_CHAIN"]) {
    delete env[name]
  }
  if (options.natsUrl !== undefined) env.NATS_URL = options.natsUrl
  Object.assign(env, options.env)
  if (options.withoutChain === true) env.SLUICE_BENCH_WITHOUT_CHAIN = "1"
  const nodeArgs = (process.env.BENCH_SLUICE_NODE_ARGS ?? "").split(" ").filter((a) => a !== "")
  // Another build's server (an older commit's worktree, built) measured by this bench: BENCH_SLUICE_SERVER=<its bin/server.mjs>.
  const started = spawnNode([...nodeArgs, process.env.BENCH_SLUICE_SERVER ?? "bin/server.mjs"], env)
  const kill = onCleanup(() => stopProcess(started.child))
  const url = `http://127.0.0.1:${port}`
  await waitUntilOk(`${url}/openapi.json`, started, "sluice")
  return {
    pid: started.child.pid!,
    url,
    dataDir: dir.path,
    backend: options.natsUrl === undefined ? "embedded" : "nats",
    stop: async () => {
      await kill()
      await dir.remove()
    },
  }
}

export const startNats = async (): Promise<NatsServer> => {
  const nats = await startNatsServer()
  const stop = onCleanup(() => nats.stop())
  return { ...nats, stop }
}

const statusKb = (pid: number, field: "VmRSS" | "VmHWM"): number | undefined => {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return match?.[1] === undefined ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

const MB = 1_000_000

export const residentMb = (pid: number): number => ((statusKb(pid, "VmRSS") ?? 0) * 1024) / MB

/** The kernel's record of the process's largest resident set so far. */
export const highWaterMb = (pid: number): number => ((statusKb(pid, "VmHWM") ?? 0) * 1024) / MB

/** Samples a process's resident set every `everyMs`; `stop` answers the largest sample and the kernel's high-water mark. */
export const sampleRss = (pid: number, everyMs = 100) => {
  let peakKb = statusKb(pid, "VmRSS") ?? 0
  const timer = setInterval(() => (peakKb = Math.max(peakKb, statusKb(pid, "VmRSS") ?? 0)), everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      peakKb = Math.max(peakKb, statusKb(pid, "VmRSS") ?? 0)
      return { sampledMb: (peakKb * 1024) / MB, highWaterMb: highWaterMb(pid) }
    },
  }
}

export interface Readers {
  readonly pid: number
  /** Opens every reader's keep-alive socket to this Sluice, unmeasured: before `run`, so no connect lands in a latency. */
  readonly warm: (warm: Omit<ReadersWarm, "type">) => Promise<void>
  /** Starts the warmed readers on a batch; `stop` answers once they have all stopped. */
  readonly run: (start: Omit<ReadersStart, "type">) => { readonly stop: () => Promise<ReadersDone> }
  readonly close: () => Promise<void>
}

/** B12's readers (bench/readers.ts) in their own node process, driven over IPC. */
export const startReaders = async (): Promise<Readers> => {
  const child = fork(join(repoRoot, "bench/readers.ts"), [], { cwd: repoRoot, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] })
  const close = onCleanup(() => stopProcess(child))
  const next = () =>
    new Promise<ReadersDone | { type: "ready" | "warm" }>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the readers' process exited (${code})`))
      child.once("exit", onExit)
      child.once("message", (m: ReadersDone | { type: "ready" | "warm" }) => {
        child.off("exit", onExit)
        resolve(m)
      })
    })
  await next()
  return {
    pid: child.pid!,
    warm: async (warm) => {
      const done = next()
      child.send({ type: "warm", ...warm } satisfies ReadersWarm)
      if ((await done).type !== "warm") throw new Error("the readers did not warm up")
    },
    run: (start) => {
      const done = next()
      child.send({ type: "start", ...start } satisfies ReadersStart)
      return {
        stop: async () => {
          child.send({ type: "stop" })
          const m = await done
          if (m.type !== "done") throw new Error(`the readers answered ${m.type}`)
          return m
        },
      }
    },
    close,
  }
}

export interface PlainClient {
  readonly pid: number
  /** The plain client's calls for `rows` small rows of `model`: wall ms, and its process's CPU ms over them. */
  readonly run: (run: Omit<PlainRun, "type">) => Promise<PlainDone>
  readonly close: () => Promise<void>
}

/** The plain client in its own node process (bench/plainClientProcess.ts), driven over IPC. */
export const startPlainClient = async (): Promise<PlainClient> => {
  const child = fork(join(repoRoot, "bench/plainClientProcess.ts"), [], { cwd: repoRoot, execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] })
  const close = onCleanup(() => stopProcess(child))
  const next = () =>
    new Promise<PlainDone | { type: "ready" }>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the plain client's process exited (${code})`))
      child.once("exit", onExit)
      child.once("message", (m: PlainDone | { type: "ready" }) => {
        child.off("exit", onExit)
        resolve(m)
      })
    })
  await next()
  return {
    pid: child.pid!,
    run: async (run) => {
      const done = next()
      child.send({ type: "run", ...run } satisfies PlainRun)
      const m = await done
      if (m.type !== "done") throw new Error(`the plain client answered ${m.type}`)
      return m
    },
    close,
  }
}
