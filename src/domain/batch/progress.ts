/** How many spans a batch's timeline is cut into, at most. */
export const TIMELINE_BUCKETS = 60

const SECOND = 1000
/** The round spans a timeline's buckets take, narrowest first. */
export const BUCKET_WIDTHS_MS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * SECOND)

/** The narrowest round span (1 s, 2 s, 5 s … 1 day) that cuts `spanMs` into at most TIMELINE_BUCKETS. */
export const bucketWidthMs = (spanMs: number) =>
  BUCKET_WIDTHS_MS.find((width) => Math.ceil(Math.max(spanMs, 1) / width) <= TIMELINE_BUCKETS) ?? Math.ceil(spanMs / TIMELINE_BUCKETS)

/**
 * A final batch's own rate: the rows its attempts settled over the time from its first row's start
 * to its end, which no later read changes. Under a millisecond counts as one.
 */
export const finalRowsPerSecond = (rows: number, startedMs: number, endedMs: number) =>
  Math.round((rows * SECOND * 1000) / Math.max(1, endedMs - startedMs)) / 1000

/** Rows settled in each bucket from the first (`counts` by bucket index, absent ones none), `buckets` long. */
export const timeline = (counts: ReadonlyArray<{ readonly bucket: number; readonly rows: number }>, buckets: number) => {
  const settled = Array.from({ length: buckets }, () => 0)
  for (const { bucket, rows } of counts) settled[Math.min(Math.max(bucket, 0), buckets - 1)]! += rows
  return settled
}
