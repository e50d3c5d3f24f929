import { partitionScenario, sleep } from "../support/partitionScenario.js"

/*
 * The two Sluice instances cannot reach each other for 10 s while both reach every NATS node: they
 * share the work through NATS alone, so nothing should change. Batches are created through both.
 */
partitionScenario("instances-cut-from-each-other", "the two instances cut from each other, not from NATS, for 10 s", async (d, load) => {
  const leasesAtCut = await d.leases()
  const cutAt = Date.now()
  d.network.cut("s1", "s2")
  await sleep(2_000)
  void load.create("during-cut-s1", d.instance("s1"))
  void load.create("during-cut-s2", d.instance("s2"))
  await sleep(8_000)
  d.network.heal("s1", "s2")
  return { cutAt, healedAt: Date.now(), leasesAtCut }
})
