import { INSTANCES, MODELS, NATS_NODES } from "../support/partitionedDeployment.js"
import { partitionScenario, sleep } from "../support/partitionScenario.js"

/*
 * The instance holding model-a's lease loses every NATS node for 10 s while it can still reach the
 * upstream: its lease lapses, the other instance takes the model over, and the cut one must neither
 * write nor run past its lease. Batches are created through both instances during the cut.
 */
partitionScenario("owner-cut-from-nats", "the owner of a model's lease cut off from every NATS node for 10 s", async (d, load) => {
  const leasesAtCut = await d.leases()
  const owner = leasesAtCut.find((l) => l.model === MODELS[0])!.owner
  const other = INSTANCES.find((i) => i !== owner)!
  const cutAt = Date.now()
  d.network.isolate(owner, NATS_NODES)
  await sleep(2_000)
  void load.create("during-cut-owner", d.instance(owner))
  void load.create("during-cut-other", d.instance(other))
  await sleep(8_000)
  d.network.rejoin(owner, NATS_NODES)
  return { cutAt, healedAt: Date.now(), leasesAtCut, extra: { cut: owner } }
})
