import { cpuMs, mainThreadCpuMs, ownCpuMs } from "./cpuTime.js"
import type { SluiceApi } from "./sluiceApi.js"

export interface BatchCost {
  readonly rowsPerSecond: number
  readonly seconds: number
  /** CPU ms of each of the processes asked for, over the same span as the rows/s. */
  readonly cpuMs: ReadonlyArray<number>
}

/**
 * As sluiceRowsPerSecond: creates the batch and polls it every 25 ms until `completed` is seen, rows/s
 * from the create's answer. Reads the CPU time of `pids` from /proc over that span; `accepted` runs
 * once the create is answered (before the CPU's first reading), `finished` once `completed` is seen.
 */
export const batchCost = async (
  api: SluiceApi,
  body: string,
  rows: number,
  /** A pid counts the process and those it started (Sluice's HTTP fronts); `{ own }` the process alone; `{ main }` its main thread alone. */
  pids: ReadonlyArray<number | { readonly own: number } | { readonly main: number }>,
  hooks: { readonly accepted?: (batchId: string) => Promise<void>; readonly finished?: () => Promise<void> } = {},
): Promise<BatchCost> => {
  const created = await api.create(body)
  await hooks.accepted?.(created.id)
  const read = (pid: number | { readonly own: number } | { readonly main: number }) =>
    typeof pid === "number" ? cpuMs(pid) : "own" in pid ? ownCpuMs(pid.own) : mainThreadCpuMs(pid.main)
  const cpu0 = pids.map(read)
  const done = await api.waitFinal(created.id, 25)
  const cpu = pids.map((pid, i) => read(pid) - cpu0[i]!)
  await hooks.finished?.()
  const counts = done.batch.request_counts
  if (done.batch.status !== "completed" || counts.completed !== rows) {
    throw new Error(`batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(counts)}`)
  }
  const seconds = (done.at - created.acceptedAt) / 1000
  return { rowsPerSecond: rows / seconds, seconds, cpuMs: cpu }
}
