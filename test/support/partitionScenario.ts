import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BatchLoad, batchLoad } from "./batchLoad.js"
import { client } from "./client.js"
import { checkAfterHeal, type FaultTimes, summary } from "./partitionChecks.js"
import { type PartitionedDeployment, releaseUnderTest, startPartitionedDeployment, withTimeout } from "./partitionedDeployment.js"
import { waitFor } from "./waitFor.js"

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Rows completed so far over the batches created, as the first instance that answers reads them. */
const completedRows = async (d: PartitionedDeployment, load: BatchLoad): Promise<number> => {
  let total = 0
  for (const b of await load.created()) {
    for (const i of d.instances) {
      const read = await withTimeout("a read", client(i.url).call("GET", `/v1/batches/${b.id}`), 2_000).catch(() => undefined)
      if (read?.status === 200) {
        total += read.body.request_counts.completed as number
        break
      }
    }
  }
  return total
}

/**
 * One partition scenario on its own deployment: two batches of 100 rows over both models created
 * through each instance, the fault once 20 of their rows have completed (it creates more while links
 * are cut and answers when it cut and healed), then every check of checkAfterHeal, and a one-line
 * summary of the figures on the console.
 */
export const partitionScenario = (
  name: string,
  title: string,
  fault: (d: PartitionedDeployment, load: BatchLoad) => Promise<FaultTimes & { readonly extra?: Record<string, unknown> }>,
) =>
  describe(`partition: ${title} (nats-server ${releaseUnderTest()})`, () => {
    let d: PartitionedDeployment | undefined
    let failed = false

    beforeAll(async () => {
      d = await startPartitionedDeployment()
    }, 120_000)
    afterAll(async () => {
      const keep = failed || process.env.SLUICE_PARTITION_KEEP === "1"
      if (keep) console.log(`partition ${name}: logs and stores kept in ${d?.root}`)
      await d?.stop(keep)
    }, 60_000)

    it("finishes every batch after the heal, each row's result stored once and read the same everywhere", { timeout: 240_000 }, async ({ onTestFailed }) => {
      onTestFailed(() => void (failed = true))
      const load = batchLoad()
      await load.create("before-s1", d!.instance("s1"))
      await load.create("before-s2", d!.instance("s2"))
      await waitFor("20 rows to complete before the fault", async () => (await completedRows(d!, load)) >= 20, { timeoutMs: 60_000, everyMs: 200 })
      const times = await fault(d!, load)
      expect(d!.network.cuts(), "every link healed").toEqual([])
      const figures = await checkAfterHeal(d!, load, times)
      console.log(summary(name, d!, figures, { owners_at_cut: Object.fromEntries(times.leasesAtCut.map((l) => [l.model, l.owner])), ...times.extra }))
    })
  })
