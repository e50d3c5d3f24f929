import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import { parse, stringify } from "yaml"
import { absentReason, prometheusBinary, skipWithout } from "./support/prometheusBinaries.js"

/*
 * deploy/observability's alert rules through promtool, Prometheus's own checker: the rules parse, their
 * unit tests (alerts.test.yml) pass, every alert has a test in which it fires and one in which it stays
 * quiet, and the compose profile's prometheus.yml is a valid config with them.
 */

const dir = join(import.meta.dirname, "..", "deploy", "observability")
const promtool = prometheusBinary("promtool")
const run = promisify(execFile)

interface Rule {
  readonly alert: string
  readonly expr: string
  readonly for?: string
  readonly labels?: Record<string, string>
  readonly annotations?: Record<string, string>
}
interface RuleTest {
  readonly alertname: string
  readonly exp_alerts?: ReadonlyArray<unknown>
}

const rules = (parse(readFileSync(join(dir, "alerts.yml"), "utf8")) as { groups: Array<{ rules: Array<Rule> }> }).groups.flatMap((g) => g.rules)
const unitTests = (parse(readFileSync(join(dir, "alerts.test.yml"), "utf8")) as { tests: Array<{ alert_rule_test: Array<RuleTest> }> }).tests.flatMap(
  (t) => t.alert_rule_test,
)

const promtoolSays = async (...args: ReadonlyArray<string>) => {
  if (promtool === undefined) throw new Error(absentReason("promtool"))
  try {
    return (await run(promtool, args, { cwd: dir })).stdout
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string }
    throw new Error(`promtool ${args.join(" ")} failed:\n${failed.stdout ?? ""}${failed.stderr ?? ""}`)
  }
}

describe("the alert rules", () => {
  it("every alert waits a while, has a severity, a summary and a description", () => {
    expect(rules.length).toBeGreaterThanOrEqual(8)
    for (const rule of rules) {
      expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/)
      expect(["warning", "critical"], rule.alert).toContain(rule.labels?.severity)
      expect(rule.annotations?.summary, rule.alert).toBeTruthy()
      expect(rule.annotations?.description, rule.alert).toBeTruthy()
    }
  })

  it("every alert has a unit test where it fires and one where it stays quiet", () => {
    for (const rule of rules) {
      const mine = unitTests.filter((t) => t.alertname === rule.alert)
      expect(mine.some((t) => (t.exp_alerts ?? []).length > 0), `${rule.alert} fires in alerts.test.yml`).toBe(true)
      expect(mine.some((t) => (t.exp_alerts ?? []).length === 0), `${rule.alert} stays quiet in alerts.test.yml`).toBe(true)
    }
  })

  describe.skipIf(skipWithout("promtool", promtool))("through promtool", () => {
    it("promtool check rules: the rules parse", async () => {
      expect(await promtoolSays("check", "rules", "alerts.yml")).toContain(`SUCCESS: ${rules.length} rules found`)
    })

    it("promtool test rules: each alert fires on the bad series and stays quiet on the healthy ones", async () => {
      expect(await promtoolSays("test", "rules", "alerts.test.yml")).toContain("SUCCESS")
    })

    it("promtool check config: the compose profile's prometheus.yml, its rule files where compose mounts them", async () => {
      const config = parse(readFileSync(join(dir, "prometheus.yml"), "utf8")) as { rule_files: Array<string> }
      // Compose mounts alerts.yml at the path the config names (test/compose.test.ts checks that).
      expect(config.rule_files).toEqual(["/etc/prometheus/alerts.yml"])
      const tmp = mkdtempSync(join(tmpdir(), "sluice-promtool-"))
      try {
        writeFileSync(join(tmp, "prometheus.yml"), stringify({ ...config, rule_files: [join(dir, "alerts.yml")] }))
        expect(await promtoolSays("check", "config", join(tmp, "prometheus.yml"))).toContain("SUCCESS")
      } finally {
        rmSync(tmp, { recursive: true, force: true })
      }
    })
  })
})
