import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { stringify } from "yaml"
import { freePort, lostPortRace } from "./ports.js"

export interface Sample {
  readonly metric: Record<string, string>
  readonly value: readonly [number, string]
}

export interface ActiveAlert {
  readonly labels: Record<string, string>
  readonly annotations: Record<string, string>
  readonly state: "pending" | "firing"
}

export interface PrometheusServer {
  readonly url: string
  /** An instant query through `/api/v1/query`, at now. */
  query(expr: string): Promise<ReadonlyArray<Sample>>
  /** The alerts pending or firing now (`/api/v1/alerts`: resolved ones are not listed). */
  alerts(): Promise<ReadonlyArray<ActiveAlert>>
  output(): string
  stop(): Promise<void>
}

/**
 * A real Prometheus (Debian's `/usr/bin/prometheus`) on a free loopback port, with its TSDB in a
 * temporary directory and `config` as its configuration; `files` are written beside the config first
 * (rule files the config names by their path in `dir`).
 */
export const startPrometheus = async (
  binary: string,
  config: (dir: string) => object,
  files: Record<string, string> = {},
): Promise<PrometheusServer> => {
  const dir = mkdtempSync(join(tmpdir(), "sluice-prometheus-"))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  writeFileSync(join(dir, "prometheus.yml"), stringify(config(dir)))
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(binary, dir)
    } catch (error) {
      if (attempt >= 5 || !(error instanceof Error) || !lostPortRace(error.message)) {
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }
}

const launch = async (binary: string, dir: string): Promise<PrometheusServer> => {
  const port = await freePort()
  const data = join(dir, `data-${port}`)
  mkdirSync(data)
  const child: ChildProcess = spawn(
    binary,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${data}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ["ignore", "pipe", "pipe"] },
  )
  let output = ""
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    await exited
  }
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited during start:\n${output}`)
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`prometheus did not start within 30 s:\n${output}`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`)
    const body = (await response.json()) as { status: string; data: T; error?: string }
    if (body.status !== "success") throw new Error(`prometheus ${path}: ${response.status} ${body.error ?? JSON.stringify(body)}`)
    return body.data
  }
  return {
    url,
    query: async (expr) => (await api<{ result: Array<Sample> }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: Array<ActiveAlert> }>("/api/v1/alerts")).alerts,
    output: () => output,
    stop: async () => {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * What an alert expression watches, each part a query that has data whenever its series exist: its
 * operands at the top level (split at `and`, `unless` and `or`, with their `on(…)`/`ignoring(…)`), each
 * without its enclosing parentheses and its trailing comparison to a number. The whole expression has
 * data only while the alert's condition holds; its parts must have data whenever Sluice runs.
 */
export const watchedParts = (expr: string): Array<string> => {
  const parts: Array<string> = []
  let depth = 0
  let start = 0
  let quote: string | undefined
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i]!
    if (quote !== undefined) {
      if (c === "\\") i++
      else if (c === quote) quote = undefined
      continue
    }
    if (c === '"' || c === "'" || c === "`") quote = c
    else if (c === "(" || c === "{" || c === "[") depth++
    else if (c === ")" || c === "}" || c === "]") depth--
    else if (depth === 0 && /[\s)]/.test(expr[i - 1] ?? "")) {
      const setOp = /^(?:and|or|unless)\b\s*(?:(?:on|ignoring)\s*\([^)]*\))?/.exec(expr.slice(i))
      if (setOp !== null) {
        parts.push(expr.slice(start, i))
        i += setOp[0].length - 1
        start = i + 1
      }
    }
  }
  parts.push(expr.slice(start))
  return parts.map((p) => withoutThreshold(p.trim()))
}

const enclosed = (expr: string) => {
  if (!expr.startsWith("(") || !expr.endsWith(")")) return false
  let depth = 0
  for (let i = 0; i < expr.length; i++) {
    if (expr[i] === "(") depth++
    else if (expr[i] === ")" && --depth === 0 && i < expr.length - 1) return false
  }
  return true
}

const depthAt = (expr: string, at: number) => {
  let depth = 0
  for (let i = 0; i < at; i++) {
    if ("({[".includes(expr[i]!)) depth++
    else if (")}]".includes(expr[i]!)) depth--
  }
  return depth
}

const THRESHOLD = /\s*(?:==|!=|>=|<=|>|<)\s*(?:bool\s+)?[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?\s*$/

const withoutThreshold = (expr: string): string => {
  const inner = enclosed(expr) ? expr.slice(1, -1).trim() : expr
  const threshold = THRESHOLD.exec(inner)
  return threshold !== null && depthAt(inner, threshold.index) === 0 ? inner.slice(0, threshold.index).trim() : inner
}
