import { INSTANCES, MODELS, NATS_NODES } from "../support/partitionedDeployment.js"
import { partitionScenario, sleep } from "../support/partitionScenario.js"

/*
 * The links between model-a's owner and every NATS node go down and up every 1–2 s for 20 s: its
 * connections stall and resume over and over, its lease may be lost and taken back. Batches are
 * created through both instances while it flaps.
 */
partitionScenario("flapping-link", "one instance's links to NATS down and up every 1–2 s for 20 s", async (d, load) => {
  const leasesAtCut = await d.leases()
  const flapping = leasesAtCut.find((l) => l.model === MODELS[0])!.owner
  const other = INSTANCES.find((i) => i !== flapping)!
  const cutAt = Date.now()
  const flaps = d.network.flap(flapping, NATS_NODES, { forMs: 20_000 })
  await sleep(5_000)
  void load.create("during-flap-flapping", d.instance(flapping))
  void load.create("during-flap-other", d.instance(other))
  const flips = await flaps
  return { cutAt, healedAt: Date.now(), leasesAtCut, extra: { flapping, flips } }
})
