import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

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
}

export interface SluiceOptions {
  readonly natsUrl?: string
  readonly models?: ReadonlyArray<CatalogEntry>
  readonly env?: Record<string, string>
  /** Reuse a data directory (for restart tests); a fresh temporary one otherwise. */
  readonly dataDir?: string
}

export interface Sluice {
  readonly url: string
  readonly dataDir: string
  readonly port: number
  output(): string
  /** Ends the process with a signal and waits for it to exit; answers its exit code or signal. */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>
  /** Removes the temporary data directory (after stop). */
  cleanup(): void
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Starts Sluice as its own process (`node --import tsx src/main.ts`), as a user would run it. */
export const startSluice = async (options: SluiceOptions = {}): Promise<Sluice> => {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "sluice-test-"))
  const port = await freePort()
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    SLUICE_PORT: String(port),
    SLUICE_HOST: "127.0.0.1",
    SLUICE_DATA_DIR: dataDir,
    SLUICE_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
    ...options.env,
  }
  delete env.NATS_URL
  delete env.SLUICE_MODELS
  if (options.natsUrl !== undefined) env.NATS_URL = options.natsUrl
  if (options.models !== undefined) {
    const path = join(dataDir, "models.json")
    writeFileSync(path, JSON.stringify({ models: options.models }))
    env.SLUICE_MODELS = path
  }
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  )
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`sluice exited during start:\n${output}`)
    try {
      const response = await fetch(`${url}/openapi.json`)
      if (response.ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL")
      throw new Error(`sluice did not start within 30 s:\n${output}`)
    }
    await sleep(50)
  }
  return {
    url,
    dataDir,
    port,
    output: () => output,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
    cleanup: () => rmSync(dataDir, { recursive: true, force: true }),
  }
}
