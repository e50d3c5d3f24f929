import { Console, Effect } from "effect"
import { format, stripVTControlCharacters } from "node:util"

/** Results and ids go to stdout, so they can be piped; everything for the person at the terminal goes to stderr. */
export const out = (line: string) => Effect.sync(() => void process.stdout.write(`${line}\n`))

export const note = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))

/** Waits for stdout to drain when a pipe is slower than we are: a 50,000-line stream stays out of memory. */
export const outDrained = (line: string) =>
  Effect.async<void>((resume) => {
    if (process.stdout.write(`${line}\n`)) resume(Effect.void)
    else process.stdout.once("drain", () => resume(Effect.void))
  })

/** Colour only for a terminal, and never with `NO_COLOR` set to anything (https://no-color.org). */
export const colourFor = (stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean =>
  stream.isTTY === true && (env["NO_COLOR"] ?? "") === ""

export const styled = (text: string, stream: NodeJS.WriteStream) => (colourFor(stream) ? text : stripVTControlCharacters(text))

const writer = (stream: NodeJS.WriteStream, prefix = "") => (...args: ReadonlyArray<unknown>) =>
  Effect.sync(() => void stream.write(`${prefix}${styled(format(...args), stream).trim()}\n`))

/**
 * @effect/cli prints in colour whatever the output is, and its usage errors in a form of their own:
 * through this Console its text is plain where colour does not belong, and an error reads
 * `error: <message>` like every other error of this CLI.
 */
export const withPlainWhereDue = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Console.consoleWith((console) =>
    Effect.withConsole(effect, {
      ...console,
      log: writer(process.stdout),
      info: writer(process.stdout),
      error: writer(process.stderr, "error: "),
      warn: writer(process.stderr),
    }),
  )
