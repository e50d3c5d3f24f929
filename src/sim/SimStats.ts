export interface SimStats {
  /** Chat-completion requests received, valid or not. */
  readonly received: number
  /** Chat-completion answers sent, by HTTP status. Truncated answers are counted in `truncated` only. */
  readonly answered: Readonly<Record<number, number>>
  /** Requests holding a concurrency slot (being processed, or hanging). */
  readonly inFlight: number
  readonly maxInFlight: number
  /** Requests queued for a slot. */
  readonly waiting: number
  readonly hung: number
  readonly reset: number
  readonly truncated: number
}

export interface ModelCounters {
  readonly name: string
  /** The name JSON-encoded once, for splicing into answers. */
  readonly quoted: string
  running: number
  waiting: number
  readonly answered: Map<number, number>
}

export const modelCounters = (name: string): ModelCounters => ({
  name,
  quoted: JSON.stringify(name),
  running: 0,
  waiting: 0,
  answered: new Map(),
})

export const bump = (counts: Map<number, number>, status: number): void => {
  counts.set(status, (counts.get(status) ?? 0) + 1)
}
