import { parseArgs } from "node:util"
import type { SimFaults, SimulatorOptions } from "./SimulatorOptions.js"

export const CLI_USAGE = `usage: tsx src/sim/main.ts [options]   (flags override the environment)
  --host HOST            SIM_HOST          default 127.0.0.1
  --port PORT            SIM_PORT          default 0 (a free port)
  --models A,B           SIM_MODELS        default glm-5.3-flash,qwen3.6-35b
  --latency-ms MS        SIM_LATENCY_MS    default 0
  --jitter-ms MS         SIM_JITTER_MS     default 0
  --concurrency N        SIM_CONCURRENCY   default unlimited
  --seed N               SIM_SEED          default 1
  --faults JSON          SIM_FAULTS        e.g. '{"rate429":0.05,"retryAfterSeconds":2}'`

const FLAGS = {
  host: "SIM_HOST",
  port: "SIM_PORT",
  models: "SIM_MODELS",
  "latency-ms": "SIM_LATENCY_MS",
  "jitter-ms": "SIM_JITTER_MS",
  concurrency: "SIM_CONCURRENCY",
  seed: "SIM_SEED",
  faults: "SIM_FAULTS",
} as const

type Flag = keyof typeof FLAGS

const FAULT_KEYS: ReadonlyArray<keyof SimFaults> = [
  "rate429",
  "rate500",
  "rate503",
  "hangRate",
  "resetRate",
  "truncateRate",
  "retryAfterSeconds",
]

const number = (flag: Flag, raw: string): number => {
  const value = Number(raw)
  if (raw.trim() === "" || !Number.isFinite(value)) throw new Error(`--${flag} (${FLAGS[flag]}): not a number: ${raw}`)
  return value
}

const faults = (raw: string): SimFaults => {
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    throw new Error(`--faults (SIM_FAULTS): not JSON: ${raw}`)
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new Error("--faults (SIM_FAULTS): expected a JSON object")
  }
  for (const [key, value] of Object.entries(json)) {
    if (!FAULT_KEYS.includes(key as keyof SimFaults)) {
      throw new Error(`--faults (SIM_FAULTS): unknown key ${key}; known: ${FAULT_KEYS.join(", ")}`)
    }
    if (typeof value !== "number") throw new Error(`--faults (SIM_FAULTS): ${key} must be a number`)
  }
  return json as SimFaults
}

/** Simulator options from command-line flags, falling back to SIM_* environment variables. Throws on bad input. */
export const simOptionsFromArgs = (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>,
): SimulatorOptions => {
  const { values } = parseArgs({
    args: [...args],
    options: Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: "string" as const }])),
    strict: true,
    allowPositionals: false,
  })
  const read = (flag: Flag): string | undefined => {
    const value = values[flag] ?? env[FLAGS[flag]]
    return typeof value === "string" && value !== "" ? value : undefined
  }
  const options: {
    -readonly [K in keyof SimulatorOptions]: SimulatorOptions[K]
  } = {}
  const host = read("host")
  if (host !== undefined) options.host = host
  const models = read("models")
  if (models !== undefined) options.models = models.split(",").map((m) => m.trim()).filter((m) => m !== "")
  const numbers = [
    ["port", "port"],
    ["latency-ms", "latencyMs"],
    ["jitter-ms", "jitterMs"],
    ["concurrency", "concurrency"],
    ["seed", "seed"],
  ] as const
  for (const [flag, key] of numbers) {
    const raw = read(flag)
    if (raw !== undefined) options[key] = number(flag, raw)
  }
  const rawFaults = read("faults")
  if (rawFaults !== undefined) options.faults = faults(rawFaults)
  return options
}
