import type { Context } from "../context.js"
import { type Figure, atLeast, figure } from "../figures.js"
import { MODELS } from "../processes.js"
import { sluiceRowsPerSecond } from "../rowsPerSecond.js"
import { batchBody, smallRows } from "../rows.js"
import type { Scenario } from "../scenario.js"
import { cpuMs } from "../cpuTime.js"
import { ratios } from "../stats.js"

const SCRAPE_EVERY_MS = 1_000
const SCRAPES_TIMED = 200

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
    const quiet = { rate: [] as Array<number>, cpu: [] as Array<number> }
    const scraped = { rate: [] as Array<number>, cpu: [] as Array<number> }
    let scrapes = 0
    /** One batch: its rows/s, and the Sluice process's CPU time per row (µs), which the machine's load moves less. */
    const run = async (into: typeof quiet, scrape: boolean) => {
      const stop = scrape ? scraping(sluice.url) : () => 0
      const before = cpuMs(sluice.pid)
      into.rate.push(await sluiceRowsPerSecond(api, body, rows))
      into.cpu.push(((cpuMs(sluice.pid) - before) * 1000) / rows)
      scrapes += stop()
    }
    // A batch first, unmeasured, so that neither side runs on a cold process.
    await sluiceRowsPerSecond(api, body, rows)
    for (let t = 0; t < trials; t++) {
      // Turn about, so a drift in the machine's speed over the run favours neither side.
      if (t % 2 === 0) {
        await run(quiet, false)
        await run(scraped, true)
      } else {
        await run(scraped, true)
        await run(quiet, false)
      }
      ctx.progress(
        `B9 trial ${t + 1}: unscraped ${quiet.rate[t]!.toFixed(0)} rows/s, ${quiet.cpu[t]!.toFixed(0)} µs CPU a row; ` +
          `scraped ${scraped.rate[t]!.toFixed(0)} rows/s, ${scraped.cpu[t]!.toFixed(0)} µs CPU a row`,
      )
    }
    // What one scrape costs the process by itself: back-to-back scrapes of the idle service.
    const perScrape: Array<number> = []
    for (let t = 0; t < trials; t++) {
      const before = cpuMs(sluice.pid)
      for (let i = 0; i < SCRAPES_TIMED; i++) await (await fetch(`${sluice.url}/metrics`)).text()
      perScrape.push((cpuMs(sluice.pid) - before) / SCRAPES_TIMED)
    }
    const scenario = `B2: ${rows.toLocaleString("en")} rows, sim 0 ms, ${slots} slots`
    const figures: Array<Figure> = [
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice rows/s, /metrics not scraped", samples: quiet.rate }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice rows/s, /metrics scraped every second", samples: scraped.rate }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "rows/s scraped ÷ not scraped", samples: ratios(scraped.rate, quiet.rate), digits: 3, target: atLeast(0.97) }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice CPU µs a row, not scraped", samples: quiet.cpu }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "Sluice CPU µs a row, scraped every second", samples: scraped.cpu }),
      figure({ id: "B9", scenario, backend: "embedded", figure: "CPU a row not scraped ÷ scraped", samples: ratios(quiet.cpu, scraped.cpu), digits: 3, target: atLeast(0.97) }),
      figure({
        id: "B9",
        scenario: `${SCRAPES_TIMED} scrapes of the idle service, after B9's batches`,
        backend: "embedded",
        figure: "Sluice CPU ms a scrape",
        samples: perScrape,
        digits: 2,
      }),
    ]
    return {
      figures,
      notes: [
        `B9: after one unmeasured batch, each trial runs B2's batch on the embedded Sluice without scrapes and again while a client reads /metrics at once and every ${SCRAPE_EVERY_MS} ms (${scrapes} scrapes in all), the two in turns (odd trials scraped first), and reads the Sluice process's CPU time over each batch from /proc; each ratio's goal is the scrapes costing at most 3 %.`,
      ],
    }
  },
}
