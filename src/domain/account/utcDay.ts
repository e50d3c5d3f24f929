export const DAY_MS = 86_400_000

/** The UTC day `ms` falls in, as whole days since 1970-01-01: the day a daily quota counts usage under. */
export const utcDay = (ms: number): number => Math.floor(ms / DAY_MS)

/** The first 00:00 UTC after `ms`: when a daily quota used up at `ms` renews. */
export const nextUtcMidnight = (ms: number): number => (utcDay(ms) + 1) * DAY_MS

/** The UTC day `ms` falls in, as `YYYY-MM-DD`. */
export const isoDay = (ms: number): string => new Date(utcDay(ms) * DAY_MS).toISOString().slice(0, 10)

/** The day of an `isoDay` string as `utcDay` counts it; undefined for anything else. */
export const utcDayOfIso = (day: string): number | undefined => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined
  const ms = Date.parse(`${day}T00:00:00Z`)
  return Number.isNaN(ms) ? undefined : utcDay(ms)
}
