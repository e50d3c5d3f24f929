import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Exit, Option } from "effect"
import { adminCommand } from "./adminCommands.js"
import { authCommand } from "./authCommands.js"
import { batchCommand } from "./batchCommands.js"
import { CliFailure, ExitCode } from "./failure.js"

const USAGE_ERROR = 2

const sluice = Command.make("sluice").pipe(
  Command.withDescription("The Sluice batch inference CLI"),
  Command.withSubcommands([authCommand, batchCommand, adminCommand]),
)

const run = Command.run(sluice, { name: "sluice", version: "0.1.0" })

const exit = await Effect.runPromiseExit(run(process.argv).pipe(Effect.provide(NodeContext.layer)))

if (Exit.isFailure(exit)) {
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure) && failure.value instanceof CliFailure) {
    process.stderr.write(`error: ${failure.value.message}\n`)
    process.exitCode = failure.value.exitCode
  } else if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) {
    // @effect/cli has printed the problem and the usage already.
    process.exitCode = USAGE_ERROR
  } else {
    process.stderr.write(`error: ${Cause.pretty(exit.cause)}\n`)
    process.exitCode = ExitCode.error
  }
}
