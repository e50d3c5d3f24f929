/**
 * The event-loop delay of a Sluice process's main thread, from its /metrics: prom-client's default
 * metrics read a `perf_hooks.monitorEventLoopDelay` histogram (resolution 10 ms) and reset it on every
 * scrape, so one scrape starts a window and the next reads it. Node's histogram records the interval
 * between its timer's ticks, not the delay past them (an idle loop reads p50 ≈ 10.1 ms), so the
 * resolution is taken off. Nothing else may scrape the process inside the window.
 */
const RESOLUTION_MS = 10

const gauge = (text: string, name: string): number => {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text)
  if (match === null) throw new Error(`/metrics has no ${name}`)
  return Number(match[1]) * 1000
}

export interface LoopDelay {
  readonly p99Ms: number
  readonly maxMs: number
}

/** Scrapes /metrics: answers the delay since the last scrape, and starts a new window. */
export const scrapeLoopDelay = async (baseUrl: string): Promise<LoopDelay> => {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  return {
    p99Ms: Math.max(0, gauge(text, "nodejs_eventloop_lag_p99_seconds") - RESOLUTION_MS),
    maxMs: Math.max(0, gauge(text, "nodejs_eventloop_lag_max_seconds") - RESOLUTION_MS),
  }
}
