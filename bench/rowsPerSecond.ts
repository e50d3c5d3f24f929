import type { SluiceApi } from "./sluiceApi.js"

/** Creates the batch and polls it to completion: rows/s from the create's acceptance to `completed` being seen. */
export const sluiceRowsPerSecond = async (api: SluiceApi, body: string, rows: number, pollMs = 25): Promise<number> => {
  const created = await api.create(body)
  const done = await api.waitFinal(created.id, pollMs)
  const counts = done.batch.request_counts
  if (done.batch.status !== "completed" || counts.completed !== rows) {
    throw new Error(`batch ${created.id} ended ${done.batch.status} with ${JSON.stringify(counts)}`)
  }
  return rows / ((done.at - created.acceptedAt) / 1000)
}
