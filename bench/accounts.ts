import { ADMIN_TOKEN } from "./processes.js"
import { type SluiceApi, sluiceApi } from "./sluiceApi.js"

/** The service's default limit of unfinished batches per account. */
export const UNFINISHED_PER_ACCOUNT = 10

const adminPost = async <A>(baseUrl: string, path: string, body: unknown): Promise<A> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  })
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`)
  return (await response.json()) as A
}

/**
 * Enough accounts to hold `batches` unfinished batches at once: the bench's own, then internal-tier
 * ones made through the admin API (`prefix-1`, `prefix-2`, …), each with a key.
 */
export const accountsFor = async (baseUrl: string, batches: number, prefix: string): Promise<Array<SluiceApi>> => {
  const apis = [sluiceApi(baseUrl)]
  for (let a = 1; a < Math.ceil(batches / UNFINISHED_PER_ACCOUNT); a++) {
    const id = `${prefix}-${a}`
    await adminPost(baseUrl, "/admin/v1/accounts", { id, tier: "internal" })
    apis.push(sluiceApi(baseUrl, (await adminPost<{ key: string }>(baseUrl, `/admin/v1/accounts/${id}/keys`, {})).key))
  }
  return apis
}
