import { Effect } from "effect"

/** Results and ids go to stdout, so they can be piped; everything for the person at the terminal goes to stderr. */
export const out = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

export const note = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))

/** Waits for stdout to drain when a pipe is slower than we are: a 50,000-line stream stays out of memory. */
export const outDrained = (line: string) =>
  Effect.async<void>((resume) => {
    if (process.stdout.write(`${line}\n`)) resume(Effect.void)
    else process.stdout.once("drain", () => resume(Effect.void))
  })
