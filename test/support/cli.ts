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
