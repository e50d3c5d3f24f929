import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Cause, Effect, Exit, Option } from "effect"
import { adminCommand, adminNode } from "./adminCommands.js"
import { auditCommand, auditNode } from "./auditCommands.js"
import { authCommand, authNode } from "./authCommands.js"
import { batchCommand, batchNode } from "./batchCommands.js"
import { group, helpFor, resolve } from "./commandTree.js"
import { filesCommand, filesNode } from "./filesCommands.js"
import { responsesCommand, responsesNode } from "./responsesCommands.js"
import { streamCommand, streamNode } from "./streamCommands.js"
import { CliFailure, ExitCode } from "./failure.js"
import { styled, withPlainWhereDue } from "./output.js"

const VERSION = "0.1.0"

const root = group("sluice", "The Sluice batch inference CLI", [authNode, batchNode, filesNode, responsesNode, streamNode, adminNode, auditNode])
const sluice = root.own.pipe(Command.withSubcommands([authCommand, batchCommand, filesCommand, responsesCommand, streamCommand, adminCommand, auditCommand]))

const args = process.argv.slice(2)
const { path, rest } = resolve(root.node, args)
const node = path[path.length - 1]!
const words = path.map((n) => n.name).join(" ")
const isGroup = node.children.length > 0
const [next] = rest

if (args.includes("--help") || args.includes("-h") || (isGroup && next === undefined)) {
  process.stdout.write(`${styled(HelpDoc.toAnsiText(helpFor(path, VERSION)), process.stdout).trimEnd()}\n`)
} else if (isGroup && !next!.startsWith("-")) {
  const names = node.children.map((c) => c.name).join(", ")
  process.stderr.write(`error: '${words}' has no command '${next}'; it has ${names} (see ${words} --help)\n`)
  process.exitCode = ExitCode.usage
} else {
  const run = Command.run(sluice, { name: "sluice", version: VERSION })
  const exit = await Effect.runPromiseExit(withPlainWhereDue(run(process.argv)).pipe(Effect.provide(NodeContext.layer)))
  if (Exit.isFailure(exit)) {
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && failure.value instanceof CliFailure) {
      process.stderr.write(`error: ${failure.value.message}\n`)
      process.exitCode = failure.value.exitCode
    } else if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) {
      // @effect/cli has printed the problem already, through withPlainWhereDue.
      process.exitCode = ExitCode.usage
    } else {
      process.stderr.write(`error: ${Cause.pretty(exit.cause)}\n`)
      process.exitCode = ExitCode.error
    }
  }
}
