import type { Priority } from "../src/domain/scheduling/priority.js"
import { ADMIN_TOKEN } from "./processes.js"
import { type SluiceApi, sluiceApi } from "./sluiceApi.js"

/** The service's default limit of unfinished batches per account. */
export const UNFINISHED_PER_ACCOUNT = 10

const admin = async <A>(baseUrl: string, method: "POST" | "PATCH", path: string, body: unknown): Promise<A> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  })
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
  return (await response.json()) as A
}

const keyOf = async (baseUrl: string, id: string) =>
  sluiceApi(baseUrl, (await admin<{ key: string }>(baseUrl, "POST", `/admin/v1/accounts/${id}/keys`, {})).key)

/**
 * Enough accounts to hold `batches` unfinished batches at once: the bench's own, then internal-tier
 * ones made through the admin API (`prefix-1`, `prefix-2`, …), each with a key.
 */
export const accountsFor = async (baseUrl: string, batches: number, prefix: string): Promise<Array<SluiceApi>> => {
  const apis = [sluiceApi(baseUrl)]
  for (let a = 1; a < Math.ceil(batches / UNFINISHED_PER_ACCOUNT); a++) {
    const id = `${prefix}-${a}`
    await admin(baseUrl, "POST", "/admin/v1/accounts", { id, tier: "internal" })
    apis.push(await keyOf(baseUrl, id))
  }
  return apis
}

/** A new internal-tier account, then allowed `maxPriority` as an admin allows it (`PATCH`), with a key. */
export const accountAllowed = async (baseUrl: string, id: string, maxPriority: Priority): Promise<SluiceApi> => {
  await admin(baseUrl, "POST", "/admin/v1/accounts", { id, tier: "internal" })
  const account = await admin<{ max_priority?: unknown }>(baseUrl, "PATCH", `/admin/v1/accounts/${id}`, { max_priority: maxPriority })
  if (account.max_priority !== maxPriority) throw new Error(`PATCH /admin/v1/accounts/${id} answered max_priority ${JSON.stringify(account.max_priority)}`)
  return keyOf(baseUrl, id)
}
