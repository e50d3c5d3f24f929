/** Probabilities (0-1) drawn per valid completion request from the seeded PRNG; they must sum to at most 1. */
export interface SimFaults {
  readonly rate429?: number
  readonly rate500?: number
  readonly rate503?: number
  /** Never answer; the slot is held until the client gives up or the server closes. */
  readonly hangRate?: number
  /** Reset the TCP connection instead of answering. */
  readonly resetRate?: number
  /** Send the status and half the body, then end the socket. */
  readonly truncateRate?: number
  /** Retry-After on 429 answers (seeded or by directive). Default 1. */
  readonly retryAfterSeconds?: number
}

export interface SimulatorOptions {
  /** Default "127.0.0.1". */
  readonly host?: string
  /** Default 0: a free port. */
  readonly port?: number
  /** Served model names. Default ["glm-5.3-flash", "qwen3.6-35b"]. */
  readonly models?: ReadonlyArray<string>
  /** Time each request takes once it holds a slot. Default 0. */
  readonly latencyMs?: number
  /** Adds a seeded uniform extra in [0, jitterMs) to latencyMs. Default 0. */
  readonly jitterMs?: number
  /** Requests processed at once, across all models; the rest wait in one FIFO queue. Default unlimited. */
  readonly concurrency?: number
  /** Seed of the PRNG behind faults and jitter. Default 1, so runs are reproducible unless told otherwise. */
  readonly seed?: number
  readonly faults?: SimFaults
}

export const DEFAULT_MODELS: ReadonlyArray<string> = ["glm-5.3-flash", "qwen3.6-35b"]

export interface ResolvedOptions {
  readonly host: string
  readonly port: number
  readonly models: ReadonlyArray<string>
  readonly latencyMs: number
  readonly jitterMs: number
  readonly concurrency: number
  readonly seed: number
  /** Cumulative thresholds for one uniform draw: 429, 500, 503, hang, reset, truncate. */
  readonly faultThresholds: readonly [number, number, number, number, number, number]
  readonly retryAfterSeconds: number
}

const nonNegative = (name: string, value: number | undefined, fallback: number): number => {
  const resolved = value ?? fallback
  if (!Number.isFinite(resolved) || resolved < 0) throw new RangeError(`sim: ${name} must be a finite number >= 0`)
  return resolved
}

export const resolveOptions = (options: SimulatorOptions = {}): ResolvedOptions => {
  const models = options.models ?? DEFAULT_MODELS
  if (models.length === 0 || models.some((m) => m.length === 0)) {
    throw new RangeError("sim: models must be non-empty names")
  }
  const port = options.port ?? 0
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError("sim: port must be 0-65535")
  const concurrency = options.concurrency ?? Infinity
  if (!(concurrency === Infinity || (Number.isInteger(concurrency) && concurrency >= 1))) {
    throw new RangeError("sim: concurrency must be a positive integer")
  }
  const seed = options.seed ?? 1
  if (!Number.isInteger(seed)) throw new RangeError("sim: seed must be an integer")
  const faults = options.faults ?? {}
  const rates = [
    nonNegative("faults.rate429", faults.rate429, 0),
    nonNegative("faults.rate500", faults.rate500, 0),
    nonNegative("faults.rate503", faults.rate503, 0),
    nonNegative("faults.hangRate", faults.hangRate, 0),
    nonNegative("faults.resetRate", faults.resetRate, 0),
    nonNegative("faults.truncateRate", faults.truncateRate, 0),
  ] as const
  let sum = 0
  const thresholds = rates.map((rate) => (sum += rate)) as unknown as ResolvedOptions["faultThresholds"]
  if (sum > 1 + 1e-9) throw new RangeError("sim: fault rates must sum to at most 1")
  return {
    host: options.host ?? "127.0.0.1",
    port,
    models,
    latencyMs: nonNegative("latencyMs", options.latencyMs, 0),
    jitterMs: nonNegative("jitterMs", options.jitterMs, 0),
    concurrency,
    seed,
    faultThresholds: thresholds,
    retryAfterSeconds: nonNegative("faults.retryAfterSeconds", faults.retryAfterSeconds, 1),
  }
}
