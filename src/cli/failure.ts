import { Data, Effect } from "effect"

/** Exit codes of `sluice batch wait`, one per way a batch can end; docs/cli.md lists them. */
export const ExitCode = {
  ok: 0,
  error: 1,
  usage: 2,
  failed: 3,
  expired: 4,
  cancelled: 5,
  timedOut: 124,
} as const

/** Printed as `error: <message>`, whatever went wrong: the SDK's errors already name the call and its answer. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly exitCode: number
}> {}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** Runs an SDK call; whatever it throws becomes the message the CLI prints. */
export const sdk = <A>(call: () => Promise<A>, exitCode: number = ExitCode.error): Effect.Effect<A, CliFailure> =>
  Effect.tryPromise({ try: call, catch: (error) => new CliFailure({ message: describe(error), exitCode }) })

export const fail = (message: string, exitCode: number = ExitCode.error) => Effect.fail(new CliFailure({ message, exitCode }))
