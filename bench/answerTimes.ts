/**
 * How long Sluice itself took to answer the polled reads, from its own request histogram
 * (`sluice_http_request_duration_seconds`, which the fronts report to): from the request parsed by
 * the process that answers it to its answer written. A reader's latency adds the time its request
 * waited to be read (behind the other connections' requests in that process's loop, or for a core),
 * and its own process's queueing.
 */
const ROUTES = ['route="/v1/batches"', 'route="/v1/batches/:batch_id"', 'route="/v1/batches/:batch_id/results"']

/** The polled reads' answers so far, by bucket bound in seconds (cumulative, as the histogram counts them). */
export type AnswerBuckets = ReadonlyMap<number, number>

export const answerBuckets = async (baseUrl: string): Promise<AnswerBuckets> => {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  const buckets = new Map<number, number>()
  for (const line of text.split("\n")) {
    if (!line.startsWith("sluice_http_request_duration_seconds_bucket{") || !line.includes('method="GET"') || !line.includes('status="200"')) continue
    if (!ROUTES.some((route) => line.includes(route))) continue
    const le = /le="([^"]+)"/.exec(line)![1]!
    const bound = le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le)
    buckets.set(bound, (buckets.get(bound) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)))
  }
  return buckets
}

/** The smallest bucket bound (ms) holding quantile `q` of the answers between two readings. */
export const answerQuantileMs = (before: AnswerBuckets, after: AnswerBuckets, q: number): number => {
  const bounds = [...after.keys()].sort((a, b) => a - b)
  const count = (bound: number) => (after.get(bound) ?? 0) - (before.get(bound) ?? 0)
  const total = count(Number.POSITIVE_INFINITY)
  if (total === 0) return Number.NaN
  for (const bound of bounds) if (count(bound) >= q * total) return bound * 1000
  return Number.POSITIVE_INFINITY
}
