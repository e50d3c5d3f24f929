import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export const SLUICE_BIN = fileURLToPath(new URL("../../bin/sluice.mjs", import.meta.url))

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the real `sluice` binary as a user would, with only the environment given here (and PATH/HOME). */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>, cwd?: string): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(SLUICE_BIN, args, {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      ...(cwd === undefined ? {} : { cwd }),
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })
