import { spawnSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { runCli, SLUICE_BIN } from "../support/cli.js"

const ESC = "\x1b["

/** The command run on a pseudo-terminal by script(1), as from an interactive shell; what the terminal showed. */
const onTerminal = (args: string, env: Record<string, string> = {}) =>
  spawnSync("script", ["-qefc", `${SLUICE_BIN} ${args}`, "/dev/null"], {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", TERM: "xterm", ...env },
    encoding: "utf8",
  }).stdout

describe("sluice --help and its commands' help, run as a process", () => {
  it("lists every command once under its full name, groups with their descriptions", async () => {
    const help = await runCli(["--help"], {})
    expect(help.code).toBe(0)
    const commands = help.stdout.slice(help.stdout.indexOf("COMMANDS"))
    const named = commands.split("\n").filter((l) => l.startsWith("sluice "))
    expect(named.map((l) => l.split(" --")[0]!.split(" [")[0])).toEqual([
      "sluice auth <command>",
      "sluice auth login",
      "sluice auth status",
      "sluice auth logout",
      "sluice batch <command>",
      "sluice batch submit",
      "sluice batch wait",
      "sluice batch download-results",
      "sluice batch stream",
      "sluice batch list",
      "sluice batch get",
      "sluice batch cancel",
      "sluice batch delete",
      "sluice batch rerun",
      "sluice files <command>",
      "sluice files upload",
      "sluice files list",
      "sluice files get <id>",
      "sluice files content",
      "sluice files delete <id>",
      "sluice responses <command>",
      "sluice responses create",
      "sluice responses get",
      "sluice responses cancel",
      "sluice responses list",
      "sluice responses tail",
      "sluice stream <command>",
      "sluice stream create",
      "sluice stream list",
      "sluice stream status",
      "sluice stream submit",
      "sluice stream cancel",
      "sluice stream archive",
      "sluice admin <command>",
      "sluice admin account <command>",
      "sluice admin account create",
      "sluice admin account update",
      "sluice admin key <command>",
      "sluice admin key create",
      "sluice admin key revoke",
      "sluice admin leases",
      "sluice audit <command>",
      "sluice audit history",
      "sluice audit as-of",
      "sluice audit verify",
    ])
    expect(help.stdout).not.toContain("admin admin")
    // Each listed command is followed by its description, indented: none is blank.
    const lines = commands.split("\n")
    for (const [i, line] of lines.entries()) {
      if (line.startsWith("sluice ")) expect(lines[i + 2], `the description of ${line}`).toMatch(/^ {2}\S/)
    }
    expect(commands).toContain("sluice admin account <command>\n\n  Create an account or change it")
    expect(commands).toContain("sluice admin key <command>\n\n  Create an account's API key, or revoke one")
  })

  it("a subcommand's usage line names it from sluice down", async () => {
    const submit = await runCli(["batch", "submit", "--help"], {})
    expect(submit.code).toBe(0)
    expect(submit.stdout).toMatch(/^\$ sluice batch submit --input-file file /m)
    const create = await runCli(["admin", "key", "create", "--help"], {})
    expect(create.stdout).toMatch(/^\$ sluice admin key create \[--admin-token text\] --account-id text/m)
    const streamSubmit = await runCli(["stream", "submit", "--help"], {})
    expect(streamSubmit.stdout).toMatch(/^\$ sluice stream submit --stream-id text --input-file file \[--model text\]/m)
    const streams = await runCli(["stream"], {})
    expect(streams.code).toBe(0)
    expect(streams.stdout).toMatch(/^\$ sluice stream <command>$/m)
    const group = await runCli(["admin", "account"], {})
    expect(group.code).toBe(0)
    expect(group.stdout).toMatch(/^\$ sluice admin account <command>$/m)
    expect(group.stdout).toContain("sluice admin account update")
  })

  it("an unknown command is a usage error naming the commands there are", async () => {
    const run = await runCli(["batch", "nope"], {})
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      "error: 'sluice batch' has no command 'nope'; it has submit, wait, download-results, stream, list, get, cancel, delete, rerun (see sluice batch --help)\n",
    )
  })

  it("the responses and stream groups name their commands when given another", async () => {
    const responses = await runCli(["responses", "nope"], {})
    expect(responses.code).toBe(2)
    expect(responses.stderr).toBe("error: 'sluice responses' has no command 'nope'; it has create, get, cancel, list, tail (see sluice responses --help)\n")
    const stream = await runCli(["stream", "nope"], {})
    expect(stream.stderr).toBe("error: 'sluice stream' has no command 'nope'; it has create, list, status, submit, cancel, archive (see sluice stream --help)\n")
  })

  it("prints no colour codes into a pipe, to stdout or stderr", async () => {
    const help = await runCli(["--help"], {})
    expect(help.stdout).not.toContain(ESC)
    const usage = await runCli(["batch", "wait"], {})
    expect(usage.code).toBe(2)
    expect(usage.stderr).toBe("error: Expected to find option: '--batch-id'\n")
  })

  it("colours help on a terminal, and not with NO_COLOR set", () => {
    expect(onTerminal("--help")).toContain(ESC)
    expect(onTerminal("batch submit --help")).toContain(ESC)
    const plain = onTerminal("--help", { NO_COLOR: "1" })
    expect(plain).toContain("sluice batch submit")
    expect(plain).not.toContain(ESC)
    const usage = onTerminal("batch wait", { NO_COLOR: "1" })
    expect(usage).toContain("Expected to find option: '--batch-id'")
    expect(usage).not.toContain(ESC)
  })
})
