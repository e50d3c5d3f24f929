import { spawn, type SpawnOptions } from "node:child_process"

export interface ProcessRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command to its end with no stdin, collecting what it printed. */
export const runToEnd = (command: string, args: ReadonlyArray<string>, options: SpawnOptions): Promise<ProcessRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })
