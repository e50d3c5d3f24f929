import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { type ProcessRun, runToEnd } from "./processRun.js"

export const SLUICE_BIN = fileURLToPath(new URL("../../bin/sluice.mjs", import.meta.url))

export type CliRun = ProcessRun

/** Runs the real `sluice` binary as a user would, with only the environment given here (and PATH/HOME). */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>, cwd?: string): Promise<CliRun> =>
  runToEnd(SLUICE_BIN, args, {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
    ...(cwd === undefined ? {} : { cwd }),
  })

export interface RunningCli {
  /** What it has printed so far. */
  stdout(): string
  stderr(): string
  /** Sends a signal (SIGKILL: the process dies as in a crash or a lost terminal). */
  kill(signal: NodeJS.Signals): void
  /** Its end, with everything it printed. */
  readonly ended: Promise<CliRun>
}

/** Starts the real `sluice` binary like `runCli`, handing it back while it runs: to watch its output, or to kill it. */
export const startCli = (args: ReadonlyArray<string>, env: Record<string, string>, cwd?: string): RunningCli => {
  const child = spawn(SLUICE_BIN, args, {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    ...(cwd === undefined ? {} : { cwd }),
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
  const ended = new Promise<CliRun>((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    kill: (signal) => void (child.exitCode === null && child.signalCode === null && child.kill(signal)),
    ended,
  }
}
