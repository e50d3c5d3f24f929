import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { serverEnv } from "../../src/config/serverEnv.js"
import { freePort, lostPortRace } from "./ports.js"

export const ADMIN_TOKEN = "test-admin-token"
export const BOOTSTRAP_KEY = "hyi-test-bootstrap-key"

export interface CatalogEntry {
  readonly id: string
  readonly upstream_url: string
  readonly upstream_model?: string
  readonly batch_concurrency?: number
  readonly input_usd_per_mtok?: number
  readonly output_usd_per_mtok?: number
  readonly timeout_ms?: number
  readonly endpoints?: ReadonlyArray<"/v1/chat/completions" | "/v1/embeddings">
}

export interface SluiceOptions {
  readonly natsUrl?: string
  readonly models?: ReadonlyArray<CatalogEntry>
  readonly env?: Record<string, string>
  /** Reuse a data directory (for restart tests); a fresh temporary one otherwise. */
  readonly dataDir?: string
  /**
   * Test-only: run the actors on a TestClock driven through `adjust`/`now` (`SLUICE_TEST_CLOCK=1`),
   * starting at `startMs` (now by default). A restart passes the stopped process's last `now()`.
   */
  readonly testClock?: { readonly startMs?: number }
}

export interface Sluice {
  readonly url: string
  /** The server's process (its HTTP fronts, SLUICE_HTTP_WORKERS, are its children). */
  readonly pid: number
  readonly dataDir: string
  readonly port: number
  output(): string
  /** Ends the process with a signal and waits for it to exit; answers its exit code or signal. */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>
  /** Sends a signal without waiting for an exit: SIGSTOP pauses the process, SIGCONT resumes it. */
  signal(signal: NodeJS.Signals): void
  /** Removes the temporary data directory (after stop). */
  cleanup(): void
}

/** The actors' TestClock of a process started with `testClock`. */
export interface TestClockControls {
  /** Moves the TestClock forward, running every backoff, expiry or timeout due by then; answers the new time. */
  adjust(ms: number): Promise<number>
  now(): Promise<number>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Longer than a shutdown may take: the running rows' 30 s grace and the open requests' 10 s. */
const STOP_WITHIN_MS = 90_000
const POLL_WITHIN_MS = 15_000

const testClockControls = (port: number): TestClockControls => {
  const call = async (method: string, path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { method })
    const text = await response.text()
    if (!response.ok) throw new Error(`test clock ${method} ${path}: ${response.status} ${text}`)
    return Number(text)
  }
  return { adjust: (ms) => call("POST", `/adjust?ms=${ms}`), now: () => call("GET", "/now") }
}

/** Starts Sluice as its own process (`node bin/server.mjs`, what `npm start` runs), as a user would run it. */
export function startSluice(options: SluiceOptions & { readonly testClock: { readonly startMs?: number } }): Promise<Sluice & TestClockControls>
export function startSluice(options?: SluiceOptions): Promise<Sluice>
export async function startSluice(options: SluiceOptions = {}): Promise<Sluice | (Sluice & TestClockControls)> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "sluice-test-"))
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(options, dataDir)
    } catch (error) {
      // Another process bound a port between freePort's probe and Sluice's listen: take new ports.
      if (attempt >= 5 || !(error instanceof Error) || !lostPortRace(error.message)) throw error
    }
  }
}

const launch = async (options: SluiceOptions, dataDir: string): Promise<Sluice | (Sluice & TestClockControls)> => {
  const port = await freePort()
  const clockPort = options.testClock === undefined ? undefined : await freePort()
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...serverEnv,
    SLUICE_PORT: String(port),
    SLUICE_HOST: "127.0.0.1",
    SLUICE_DATA_DIR: dataDir,
    SLUICE_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
    ...options.env,
  }
  delete env.NATS_URL
  delete env.SLUICE_MODELS
  delete env.SLUICE_TEST_CLOCK
  delete env.SLUICE_TEST_CLOCK_PORT
  delete env.SLUICE_TEST_CLOCK_START_MS
  if (options.testClock !== undefined && clockPort !== undefined) {
    env.SLUICE_TEST_CLOCK = "1"
    env.SLUICE_TEST_CLOCK_PORT = String(clockPort)
    if (options.testClock.startMs !== undefined) env.SLUICE_TEST_CLOCK_START_MS = String(Math.round(options.testClock.startMs))
  }
  if (options.natsUrl !== undefined) env.NATS_URL = options.natsUrl
  if (options.models !== undefined) {
    const path = join(dataDir, "models.json")
    writeFileSync(path, JSON.stringify({ models: options.models }))
    env.SLUICE_MODELS = path
  }
  const child: ChildProcess = spawn(process.execPath, ["bin/server.mjs"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()))
  if (process.env.SLUICE_TEST_DUMP !== undefined) child.once("exit", () => writeFileSync(`${process.env.SLUICE_TEST_DUMP}.${port}`, output))
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  )
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sluice exited during start:\n${output}`)
    try {
      // Its own instance id: a process that took the port meanwhile would answer too, while this one fails
      // to listen and exits (and the tests would talk to another test's server).
      const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(POLL_WITHIN_MS) })
      const { instance } = health.ok ? ((await health.json()) as { instance?: string }) : {}
      if (instance === (env.SLUICE_INSTANCE_ID ?? `${hostname()}-${child.pid}`) && (await fetch(`${url}/openapi.json`)).ok) break
    } catch (error) {
      // Not listening yet; a request taken in and never answered is a defect, not a slow start.
      if ((error as Error).name === "TimeoutError") {
        child.kill("SIGKILL")
        throw new Error(`sluice took GET /healthz in during start and did not answer it within ${POLL_WITHIN_MS / 1000} s:\n${output}`)
      }
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`sluice did not start within 30 s:\n${output}`)
    }
    await sleep(50)
  }
  const started: Sluice = {
    url,
    pid: child.pid!,
    dataDir,
    port,
    output: () => output,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      // Shutdown is bounded (its rows' grace, then its connections'): one that does not end is a defect
      // to report with what the process said, not a test that hangs until its own timeout.
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), STOP_WITHIN_MS)))
      const ended = await Promise.race([exited, late]).finally(() => clearTimeout(timer))
      if (ended !== "late") return ended
      child.kill("SIGKILL")
      throw new Error(`sluice (pid ${child.pid}) did not exit within ${STOP_WITHIN_MS / 1000} s of ${signal}; its output ends:\n${output.slice(-6_000)}`)
    },
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    cleanup: () => rmSync(dataDir, { recursive: true, force: true }),
  }
  return clockPort === undefined ? started : { ...started, ...testClockControls(clockPort) }
}
