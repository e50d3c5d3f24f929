export const DAY_MS = 86_400_000

/** The UTC day `ms` falls in, as whole days since 1970-01-01: the day a daily quota counts usage under. */
export const utcDay = (ms: number): number => Math.floor(ms / DAY_MS)

/** The first 00:00 UTC after `ms`: when a daily quota used up at `ms` renews. */
export const nextUtcMidnight = (ms: number): number => (utcDay(ms) + 1) * DAY_MS
