/** How far back a model's rate looks: long enough to smooth a round of answers. */
export const RATE_WINDOW_MS = 60_000
const KEPT = 512

/**
 * A rate of events per ms over the last minute of their own times, from the latest KEPT of them.
 * Undefined before two events at different times.
 */
export class RateMeter {
  private readonly at: Array<number> = []
  private next = 0

  record(at: number) {
    if (this.at.length < KEPT) this.at.push(at)
    else this.at[this.next] = at
    this.next = (this.next + 1) % KEPT
  }

  perMs(): number | undefined {
    if (this.at.length < 2) return undefined
    let latest = Number.NEGATIVE_INFINITY
    for (const at of this.at) if (at > latest) latest = at
    let first = latest
    let n = 0
    for (const at of this.at) {
      if (at < latest - RATE_WINDOW_MS) continue
      n++
      if (at < first) first = at
    }
    return n >= 2 && latest > first ? (n - 1) / (latest - first) : undefined
  }
}
