import type { Context } from "../context.js"
import { type Figure, atLeast, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { ratios } from "../stats.js"

const SCRAPE_EVERY_MS = 1_000

/** Reads /metrics every second, as a busy Prometheus would, until stopped; answers the scrapes made. */
const scraping = (baseUrl: string) => {
  let scrapes = 0
  let failed: unknown
  const scrape = () =>
    fetch(`${baseUrl}/metrics`)
      .then(async (response) => {
        await response.text()
        if (!response.ok) throw new Error(`/metrics answered ${response.status}`)
        scrapes++
      })
      .catch((error: unknown) => (failed ??= error))
  void scrape()
  const timer = setInterval(scrape, SCRAPE_EVERY_MS)
  return () => {
    clearInterval(timer)
    if (failed !== undefined) throw failed
    return scrapes
  }
}

/**
 * B2's batch on the embedded Sluice, each trial once without scrapes and once with /metrics read every
 * second, so each ratio pairs neighbours in time.
 */
export const b9MetricsCost: Scenario = {
  id: "B9",
  title: "the cost of metrics: B2 with /metrics scraped every second, beside B2 without",
  uses: ["main"],
  run: async (ctx: Context) => {
    const { throughputRows: rows, slots, trials } = ctx.sizes
    const body = batchBody(smallRows(rows, MODELS.fast))
    const { api, sluice } = await ctx.sluice("main")
    const quiet: Array<number> = []
    const scraped: Array<number> = []
    let scrapes = 0
    const withScrapes = async () => {
      const stop = scraping(sluice.url)
      const rate = await sluiceRowsPerSecond(api, body, rows)
      scrapes += stop()
      return rate
    }
    // A batch first, unmeasured, so that neither side runs on a cold process.
    await sluiceRowsPerSecond(api, body, rows)
    for (let t = 0; t < trials; t++) {
      // Turn about, so a drift in the machine's speed over the run favours neither side.
      if (t % 2 === 0) {
        quiet.push(await sluiceRowsPerSecond(api, body, rows))
        scraped.push(await withScrapes())
      } else {
        scraped.push(await withScrapes())
        quiet.push(await sluiceRowsPerSecond(api, body, rows))
      }
      ctx.progress(`B9 trial ${t + 1}: ${quiet[t]!.toFixed(0)} rows/s unscraped, ${scraped[t]!.toFixed(0)} rows/s scraped`)
    }
    const scenario = `B2: ${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
    const figures: Array<Figure> = [
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice rows/s, /metrics not scraped", samples: quiet }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice rows/s, /metrics scraped every second", samples: scraped }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "scraped ÷ not scraped", samples: ratios(scraped, quiet), digits: 3, target: atLeast(0.97) }),
    ]
    return {
      figures,
      notes: [
        `B9: after one unmeasured batch, each trial runs B2's batch on the embedded Sluice without scrapes and again while a client reads /metrics at once and every ${SCRAPE_EVERY_MS} ms (${scrapes} scrapes in all), the two in turns (odd trials scraped first); the ratio's goal is the metrics costing at most 3 %.`,
      ],
    }
  },
}
