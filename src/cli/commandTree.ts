import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Span from "@effect/cli/HelpDoc/Span"
import * as Usage from "@effect/cli/Usage"
import { HashSet } from "effect"

/**
 * The commands as a tree, for the help this CLI renders itself: @effect/cli 0.77 names a command two
 * levels down twice in its listing (`admin admin key create`) and shows a subcommand's usage without
 * the commands above it (`$ submit`).
 */
export interface CommandNode {
  readonly name: string
  readonly description: string
  /** A leaf's command, or a group's own command without its subcommands. */
  readonly own: Command.Command<any, any, any, any>
  readonly children: ReadonlyArray<CommandNode>
}

/** A command with its description, and its node in the tree. */
export const leaf = <Name extends string, R, E, A>(description: string, command: Command.Command<Name, R, E, A>) => {
  const described = Command.withDescription(command, description)
  const [name = ""] = HashSet.toValues(Command.getNames(described))
  return { command: described, node: { name, description, own: described, children: [] } satisfies CommandNode }
}

/** A group's own command (give it its subcommands with `Command.withSubcommands`) and its node. */
export const group = <Name extends string>(name: Name, description: string, children: ReadonlyArray<CommandNode>) => {
  const own = Command.make(name).pipe(Command.withDescription(description))
  return { own, node: { name, description, own, children } satisfies CommandNode }
}

/** The nodes named by the leading words of `args`, root first; the rest of `args` after them. */
export const resolve = (root: CommandNode, args: ReadonlyArray<string>) => {
  const path = [root]
  let at = 0
  for (;;) {
    const next = path[path.length - 1]!.children.find((c) => c.name === args[at])
    if (next === undefined) return { path, rest: args.slice(at) }
    path.push(next)
    at++
  }
}

const leafConfig = CliConfig.make({ showBuiltIns: false })

/** The options every command takes (--help, --log-level, --completions, …), as @effect/cli describes them. */
const builtIns = Command.getHelp(Command.make("options"), CliConfig.defaultConfig)

const usageSpan = (node: CommandNode, prefix: string) =>
  Span.spans([Span.text(prefix), HelpDoc.getSpan(Usage.getHelp(Command.getUsage(node.own)))])

const leaves = (node: CommandNode, prefix: string): Array<[Span.Span, HelpDoc.HelpDoc]> =>
  node.children.flatMap((child) =>
    child.children.length === 0
      ? [[usageSpan(child, prefix), HelpDoc.p(child.description)] as [Span.Span, HelpDoc.HelpDoc]]
      : [
          [Span.text(`${prefix}${child.name} <command>`), HelpDoc.p(child.description)] as [Span.Span, HelpDoc.HelpDoc],
          ...leaves(child, `${prefix}${child.name} `),
        ],
  )

/** The help of the last node of `path`: its full usage line, its description and options, and every command below it. */
export const helpFor = (path: ReadonlyArray<CommandNode>, version: string): HelpDoc.HelpDoc => {
  const node = path[path.length - 1]!
  const above = path.slice(0, -1).map((n) => `${n.name} `).join("")
  const isRoot = path.length === 1
  const usage =
    node.children.length === 0 ? usageSpan(node, above) : Span.text(`${above}${node.name} <command>`)
  const header = HelpDoc.blocks([
    HelpDoc.p(`${path[0]!.name} ${version}`),
    HelpDoc.h1("USAGE"),
    HelpDoc.p(Span.spans([Span.text("$ "), usage])),
  ])
  const own = Command.getHelp(node.own, leafConfig)
  const listed = leaves(node, `${above}${node.name} `)
  const [first, ...more] = listed
  const commands = first === undefined ? HelpDoc.empty : HelpDoc.blocks([HelpDoc.h1("COMMANDS"), HelpDoc.descriptionList([first, ...more])])
  return HelpDoc.blocks([header, own, commands, isRoot ? builtIns : HelpDoc.empty])
}
