/** The value at quantile q (0–1) of the samples, by nearest rank on the sorted values. */
export const quantile = (samples: ReadonlyArray<number>, q: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank]!
}

export const median = (samples: ReadonlyArray<number>): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export const spread = (samples: ReadonlyArray<number>): Spread => ({
  median: median(samples),
  min: samples.length === 0 ? Number.NaN : Math.min(...samples),
  max: samples.length === 0 ? Number.NaN : Math.max(...samples),
})

/** Jain's fairness index (Σx)² / (n·Σx²): 1 when every share is equal, 1/n when one takes all. */
export const jain = (shares: ReadonlyArray<number>): number => {
  const sum = shares.reduce((a, b) => a + b, 0)
  const squares = shares.reduce((a, b) => a + b * b, 0)
  return squares === 0 ? 1 : (sum * sum) / (shares.length * squares)
}

/** Element-wise a[i] / b[i], for figures paired with a baseline trial measured next to them. */
export const ratios = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> =>
  a.slice(0, b.length).map((x, i) => x / b[i]!)
