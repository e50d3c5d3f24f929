import { INSTANCES, NATS_NODES, type PartitionedDeployment, streamDetailOf } from "../support/partitionedDeployment.js"
import { partitionScenario, sleep } from "../support/partitionScenario.js"

/** How many connections each instance has open to `node`, from the node's /connz. */
const connectionsTo = async (d: PartitionedDeployment, node: string): Promise<Record<string, number>> => {
  const monitor = d.nats.find((n) => n.name === node)!.monitor
  const connz = (await (await fetch(`${monitor}/connz?limit=1024`, { signal: AbortSignal.timeout(2_000) })).json()) as { connections?: Array<{ ip: string }> }
  return Object.fromEntries(INSTANCES.map((i) => [i, (connz.connections ?? []).filter((c) => c.ip === d.network.host(i).address).length]))
}

/*
 * The node leading the SLUICE stream is cut from the two other nodes and from one Sluice instance for
 * 15 s: the majority elects a new leader, while the instance still connected to the old one (the one
 * with more connections to it, so the harder case) sees a server that answers but is in a minority.
 */
partitionScenario("stream-leader-in-minority", "the stream's leader cut from the other nodes and from one instance for 15 s", async (d, load) => {
  const leader = await d.streamLeader()
  const others = NATS_NODES.filter((n) => n !== leader)
  const connections = await connectionsTo(d, leader)
  const [kept, cutInstance] = [...INSTANCES].sort((a, b) => connections[b]! - connections[a]!)
  const leasesAtCut = await d.leases()
  const cutAt = Date.now()
  d.network.isolate(leader, [...others, cutInstance!])
  await sleep(3_000)
  void load.create("during-minority-kept", d.instance(kept!))
  void load.create("during-minority-cut", d.instance(cutInstance!))
  await sleep(12_000)
  // Asked of the majority: the cut node may still name itself.
  const majorityViews = await Promise.all(d.nats.filter((n) => n.name !== leader).map((n) => streamDetailOf(n).catch(() => undefined)))
  const leaderDuringCut = majorityViews.map((v) => v?.cluster?.leader ?? "none").join("/")
  d.network.rejoin(leader, [...others, cutInstance!])
  return {
    cutAt,
    healedAt: Date.now(),
    leasesAtCut,
    extra: { old_leader: leader, leader_seen_during_cut: leaderDuringCut, kept_on_old_leader: `${kept}(${connections[kept!]}conns)`, cut_from_old_leader: cutInstance },
  }
})
