import { expect } from "vitest"
import type { RecordingUpstream } from "../recordingUpstream.js"
import { startSluice } from "../sluice.js"
import type { Healing, TcpProxy } from "../tcpProxy.js"
import { command } from "./command.js"
import { MODEL_SLOTS, type World, mayBeAway } from "./world.js"

/** An instance reaching the nats-server through `proxy`, or one on the embedded log without one; model `m-<i>` is upstream `i`'s. */
export const startInstance = (upstreams: ReadonlyArray<RecordingUpstream>, proxy: TcpProxy | undefined, dataDir?: string, startAt?: number) =>
  startSluice({
    ...(proxy === undefined ? {} : { natsUrl: `nats://127.0.0.1:${proxy.port}` }),
    // Clock jumps of days add up to more than the week a final batch or response is kept: purges are
    // other tests' subject, and here nothing the test checks may go.
    env: { SLUICE_RETENTION_DAYS: "3650", ...(proxy === undefined ? {} : { SLUICE_LEASE_TTL_MS: "1000" }) },
    // A timeout far past any clock jump here: a jump must not abandon requests the upstream still serves.
    models: upstreams.map((upstream, i) => ({
      id: `m-${i}`,
      upstream_url: upstream.url,
      batch_concurrency: MODEL_SLOTS,
      input_usd_per_mtok: 1,
      output_usd_per_mtok: 1,
      timeout_ms: 30 * 86_400_000,
    })),
    testClock: startAt === undefined ? {} : { startMs: startAt },
    ...(dataDir === undefined ? {} : { dataDir }),
  })

/** Stops one process with `signal`, then starts a new one on its data directory, its clock where the old one's was. */
const stopAndStart = (signal: "SIGTERM" | "SIGKILL", which: number) => async (w: World) => {
  const i = which % w.sluices.length
  const old = w.sluices[i]!
  const at = await old.now()
  // A graceful stop drains the running rows (and hands its leases over) and exits 0; a kill leaves them
  // for the next process, or for the other instance once the dead one's leases lapse. A cut instance is
  // stopped while cut (its drain waits for the log), and the new one starts once the partition is over.
  if (signal === "SIGKILL") w.disruptions++
  expect(await old.stop(signal)).toBe(signal === "SIGTERM" ? 0 : "SIGKILL")
  w.generations[i]!++
  if (mayBeAway(w, i)) {
    await w.partition!.healed
    w.partition = undefined
  }
  w.sluices[i] = await startInstance(w.upstreams, w.proxies[i], old.dataDir, at)
}
export const restart = (which: number) => command(`restart(#${which})`, stopAndStart("SIGTERM", which))
export const crash = (which: number) => command(`crash(#${which})`, stopAndStart("SIGKILL", which))

/** Cuts instance `which` off from the nats-server for `ms` of wall-clock time; the steps after go on meanwhile. */
export const partition = (which: number, ms: number, how: Healing) =>
  command(
    `partition(#${which}, ${ms}ms, then ${how})`,
    async (w) => {
      const i = which % w.sluices.length
      const proxy = w.proxies[i]!
      w.disruptions++
      w.partitions[i]!++
      proxy.cut()
      const healed = new Promise<void>((resolve) =>
        setTimeout(() => {
          proxy.heal(how)
          resolve()
        }, ms),
      )
      w.partition = { which: i, healed }
    },
    (w) => w.proxies.length > 0 && w.partition === undefined,
  )
