import { expect } from "vitest"
import { command } from "./command.js"
import { ACCOUNTS, type Kind, type World, adjustAll, adminAway, adminCall, api, mayBeAway, newRequest, queuedAway, received, settle } from "./world.js"

export const submit = (account: number, kinds: ReadonlyArray<Kind>, via: number) =>
  command(`submit(${ACCOUNTS[account]}, ${kinds.join(",")}, via ${via})`, async (w) => {
    const sent = kinds.map((kind) => newRequest(w, kind))
    const tag = `b${w.unique++}`
    const requests = sent.map((s, i) => ({ custom_id: `r${i}`, body: { model: `m-${account}`, messages: [{ role: "user", content: s.text }] } }))
    const created = await api(w, account, via).call("POST", "/v1/batches", { requests, metadata: { tag } })
    if (created.status === 200) w.batches.push({ id: created.body.id, account, requests: sent })
    else if (queuedAway(created) && mayBeAway(w, via)) w.unanswered.set(tag, { _tag: "batch", account, requests: sent })
    else expect([401, 403, 429], created.text).toContain(created.status)
  })

export const cancel = (pick: number, via: number) =>
  command(`cancel(#${pick}, via ${via})`, async (w) => {
    const batch = w.batches[pick % w.batches.length]
    if (batch === undefined) return
    const answer = await api(w, batch.account, via).call("POST", `/v1/batches/${batch.id}/cancel`)
    if (!(queuedAway(answer) && mayBeAway(w, via))) expect([200, 401, 429], answer.text).toContain(answer.status)
  })

export const advance = (ms: number) =>
  command(`advance(${ms}ms)`, async (w) => {
    await adjustAll(w, ms)
  })

export const midnight = command("midnight", async (w) => {
  const now = await w.sluices[0]!.now()
  const next = Math.floor(now / 86_400_000) * 86_400_000 + 86_400_000
  await adjustAll(w, next - now + 1_000)
})

export const windowCloses = command("windowCloses", async (w) => {
  await adjustAll(w, 24 * 3_600_000 + 1_000)
})

/** Revokes the account's key for its work: what it made fails; the account gets a new key, so later steps have one. */
export const revoke = (account: number) =>
  command(`revoke(${ACCOUNTS[account]})`, async (w) => {
    // Refused, it may have been stored all the same: a later call may still answer 401, which is allowed anyway.
    if (!(await adminCall(w, "POST", `/admin/v1/keys/${w.keys[account]!.keyId}/revoke`))) return
    const key = await api(w).admin("POST", `/admin/v1/accounts/${ACCOUNTS[account]}/keys`, {})
    if (adminAway(key) && mayBeAway(w, 0)) return
    expect(key.status, key.text).toBe(200)
    w.keys[account] = { ...w.keys[account]!, key: key.body.key, keyId: key.body.id }
  })

export const suspend = (account: number) =>
  command(`suspend(${ACCOUNTS[account]})`, async (w) => {
    await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "suspended" })
  })

export const restore = (account: number) =>
  command(`restore(${ACCOUNTS[account]})`, async (w) => {
    // Refused, it may have been stored all the same: the account is no longer known to be held either way.
    if (await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { status: "active", tier: "internal", daily_quota_usd: null })) {
      w.maybeStandard.delete(account)
    }
    w.held.delete(account)
  })

export const exhaustQuota = (account: number) =>
  command(`exhaustQuota(${ACCOUNTS[account]})`, async (w) => {
    if (!(await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { daily_quota_usd: 0 }))) return
    await settle()
    w.held.set(account, received(w, account))
  })

export const revokeAccess = (account: number) =>
  command(`standard(${ACCOUNTS[account]})`, async (w) => {
    w.maybeStandard.add(account)
    if (!(await adminCall(w, "PATCH", `/admin/v1/accounts/${ACCOUNTS[account]}`, { tier: "standard" }))) return
    await settle()
    w.held.set(account, received(w, account))
  })
