import { type ChildProcess, spawn } from "node:child_process"
import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createConnection } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { freePort } from "./ports.js"

export interface NatsServer {
  readonly url: string
  readonly port: number
  readonly storeDir: string
  /** The running server's process id (another after a restart). */
  pid(): number
  /** Stops the server and deletes its store. */
  stop(): Promise<void>
  /** Stops and starts the server again on the same port and store (for reconnect tests). */
  restart(): Promise<void>
  /** Stops the server, keeping its port and store for `start`. */
  halt(): Promise<void>
  /** Starts a halted server again on the same port and store. */
  start(): Promise<void>
  /**
   * Suspends (SIGSTOP) or resumes (SIGCONT) the server: a hung server, whose connections stay open and
   * answer nothing. Suspending resolves once every thread of the process has stopped.
   */
  freeze(frozen: boolean): Promise<void>
}

/** Whether every thread of the process is stopped ("T" in /proc/<pid>/task/<tid>/stat). */
const allThreadsStopped = (pid: number): boolean => {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
      return stat.slice(stat.lastIndexOf(")") + 2).startsWith("T")
    })
  } catch {
    return false
  }
}

export const findBinary = (): string => {
  const candidates = [
    ...(process.env.PATH ?? "").split(delimiter).filter((d) => d !== "").map((d) => join(d, "nats-server")),
    "/usr/sbin/nats-server",
  ]
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // try the next one
    }
  }
  throw new Error(
    "nats-server not found on PATH or at /usr/sbin/nats-server: the JetStream tests need it (apt-get install nats-server)",
  )
}

const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

const launch = (binary: string, port: number, storeDir: string, jetstream = true): Promise<ChildProcess> =>
  launchNats(binary, port, [...(jetstream ? ["-js"] : []), "-a", "127.0.0.1", "-p", String(port), "-sd", storeDir])

/** Starts nats-server with `args` and resolves once it accepts connections on `port`. */
export const launchNats = async (binary: string, port: number, args: ReadonlyArray<string>): Promise<ChildProcess> => {
  const child = spawn(binary, [...args], { stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)))
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`nats-server exited (${child.exitCode ?? child.signalCode}) on port ${port}:\n${stderr}`)
    }
    if (await accepts(port)) return child
    await new Promise((r) => setTimeout(r, 20))
  }
  child.kill("SIGKILL")
  throw new Error(`nats-server did not accept connections on port ${port} within 15s:\n${stderr}`)
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. */
export const stopProcess = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const force = setTimeout(() => child.kill("SIGKILL"), 5_000)
    child.once("exit", () => {
      clearTimeout(force)
      resolve()
    })
    child.kill("SIGTERM")
  })

/** A nats-server on its own port and store; `jetstream: false` starts it without JetStream. */
export const startNatsServer = async (options: { readonly jetstream?: boolean } = {}): Promise<NatsServer> => {
  const binary = findBinary()
  const storeDir = mkdtempSync(join(tmpdir(), "sluice-nats-"))
  // The port is outside 4222, the machine's shared server, by construction (see ports.ts).
  let port = await freePort()
  let launched: ChildProcess | undefined
  for (let attempt = 1; launched === undefined; attempt++) {
    try {
      launched = await launch(binary, port, storeDir, options.jetstream ?? true)
    } catch (error) {
      if (attempt >= 5 || !/address already in use/.test(String(error))) throw error
      port = await freePort()
    }
  }
  let child = launched
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    pid: () => child.pid!,
    stop: async () => {
      await stopProcess(child)
      rmSync(storeDir, { recursive: true, force: true })
    },
    restart: async () => {
      await stopProcess(child)
      child = await launch(binary, port, storeDir)
    },
    halt: () => stopProcess(child),
    start: async () => {
      child = await launch(binary, port, storeDir)
    },
    freeze: async (frozen) => {
      child.kill(frozen ? "SIGSTOP" : "SIGCONT")
      if (!frozen || child.pid === undefined) return
      for (let i = 0; i < 500 && !allThreadsStopped(child.pid); i++) await new Promise((r) => setTimeout(r, 2))
      if (!allThreadsStopped(child.pid)) throw new Error("nats-server did not stop on SIGSTOP")
    },
  }
}
