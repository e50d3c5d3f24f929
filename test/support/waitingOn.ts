import { isDeepStrictEqual } from "node:util"
import { expect } from "vitest"
import { startSimulator } from "../../src/sim/Simulator.js"
import { client } from "./client.js"
import { startNatsServer } from "./natsServer.js"
import { type CatalogEntry, startSluice } from "./sluice.js"
import { waitFor } from "./waitFor.js"

type Api = ReturnType<typeof client>

/** A fresh internal account (with these settings) and a client of its key on each instance, once each knows the key. */
export const freshAccount = async (apis: ReadonlyArray<Api>, settings: Record<string, unknown> = {}, urls: ReadonlyArray<string>, clientOf: (url: string, key: string) => Api) => {
  const admin = apis[0]!
  const id = `acct-${Math.random().toString(36).slice(2, 10)}`
  expect((await admin.admin("POST", "/admin/v1/accounts", { id, tier: "internal", ...settings })).status).toBe(200)
  const key = await admin.admin("POST", `/admin/v1/accounts/${id}/keys`, { expires_at: null })
  expect(key.status).toBe(200)
  const keyed = urls.map((url) => clientOf(url, key.body.key as string))
  for (const api of keyed) await waitFor("the key reaches every instance", async () => (await api.call("GET", "/v1/batches")).status === 200)
  return { id, apis: keyed }
}

/**
 * Polls every instance until each reads the same `waiting_on` with `reason` (null for none), and
 * answers it: the instances agree once they have read the same lease round.
 */
export const sameOnEvery = async (
  what: string,
  reads: ReadonlyArray<() => Promise<any>>,
  reason: string | null,
  timeoutMs = 30_000,
) => {
  let seen: Array<unknown> = []
  await waitFor(
    `${what}: waiting_on ${reason ?? "null"} on every instance`,
    async () => {
      seen = await Promise.all(reads.map((read) => read()))
      const first = seen[0] as { reason?: string } | null | undefined
      if (first === undefined) return false
      return (reason === null ? first === null : first?.reason === reason) && seen.every((s) => isDeepStrictEqual(s, first))
    },
    { timeoutMs, everyMs: 100 },
  ).catch((e: Error) => {
    throw new Error(`${e.message} (last seen ${JSON.stringify(seen)})`)
  })
  return seen[0] as any
}

/** The `sluice_batches_waiting` gauge of an instance, by reason. */
export const waitingGauge = async (url: string): Promise<Record<string, number>> => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const counts: Record<string, number> = {}
  for (const [, reason, n] of text.matchAll(/^sluice_batches_waiting\{reason="(\w+)"\} (\d+)$/gm)) counts[reason!] = Number(n)
  return counts
}

/**
 * The deployment the waiting_on tests read through: two Sluice processes on one nats-server, `owner`
 * running the models and `reader` (SLUICE_RUN_MODELS=false) only answering, their TestClocks started
 * at `startMs` and moved together, the simulator as every model's upstream. Answers once the owner
 * holds every model's lease.
 */
export const startOwnerAndReader = async (startMs: number, models: (simUrl: string) => ReadonlyArray<CatalogEntry>) => {
  const nats = await startNatsServer()
  const stops: Array<() => Promise<unknown>> = [() => nats.stop()]
  try {
    const catalog = models("http://placeholder")
    const sim = await startSimulator({ models: catalog.map((m) => m.id) })
    stops.unshift(() => sim.close())
    const entries = models(sim.url)
    const env = { SLUICE_LEASE_TTL_MS: "3000" }
    const start = (instance: string, extra: Record<string, string> = {}) =>
      startSluice({ natsUrl: nats.url, models: entries, testClock: { startMs }, env: { ...env, SLUICE_INSTANCE_ID: instance, ...extra } })
    const owner = await start("owner")
    stops.unshift(() => owner.stop("SIGKILL").then(() => owner.cleanup()))
    const reader = await start("reader", { SLUICE_RUN_MODELS: "false" })
    stops.unshift(() => reader.stop("SIGKILL").then(() => reader.cleanup()))
    await waitFor("the owner to hold every lease", async () => {
      const leases = await client(reader.url).admin("GET", "/admin/v1/leases")
      return leases.body?.data?.length === entries.length && leases.body.data.every((l: { owner: string }) => l.owner === "owner")
    })
    const urls = () => [owner.url, reader.url]
    return {
      owner,
      reader,
      urls,
      /** A fresh internal account (with these settings), with a client of its key on each instance. */
      account: (settings: Record<string, unknown> = {}) => freshAccount([client(owner.url)], settings, urls(), client),
      adjustBoth: async (ms: number) => {
        await owner.adjust(ms)
        await reader.adjust(ms)
      },
      stop: async () => {
        for (const stop of stops) await stop()
      },
    }
  } catch (error) {
    for (const stop of stops) await stop().catch(() => undefined)
    throw error
  }
}
