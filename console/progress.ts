/** Rows settled per second over the last `windowMs`, and the time left at that pace. */
export class Pace {
  private readonly settled: Array<number> = []
  constructor(private readonly windowMs = 10_000) {}

  settle(at: number) {
    this.settled.push(at)
  }

  rate(now: number): number {
    while (this.settled.length > 0 && this.settled[0]! < now - this.windowMs) this.settled.shift()
    if (this.settled.length < 2) return 0
    const span = Math.max(1000, now - this.settled[0]!)
    return (this.settled.length * 1000) / span
  }
}

export const eta = (remaining: number, rowsPerSecond: number) => {
  if (remaining <= 0) return "done"
  if (rowsPerSecond <= 0) return "—"
  const s = Math.round(remaining / rowsPerSecond)
  return s < 60 ? `${s} s` : s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}
