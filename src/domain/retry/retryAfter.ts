/** `Retry-After` as seconds or an HTTP date, in ms from `nowMs`; undefined when absent or unreadable. */
export const retryAfterMs = (header: string | null | undefined, nowMs: number): number | undefined => {
  if (header === null || header === undefined || header.trim() === "") return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}
