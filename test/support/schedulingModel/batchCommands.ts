import { expect } from "vitest"
import { DEFAULT_PRIORITY, type Priority } from "../../../src/domain/scheduling/priority.js"
import { command } from "./command.js"
import { awaitClaim } from "./priorityChecks.js"
import { ACCOUNTS, type Kind, type World, adjustAll, adminAway, adminCall, api, mayBeAway, newRequest, queuedAway, received, settle } from "./world.js"

/** A batch of one request of each kind, at `priority` (none sent: standard). */
const createBatch = async (w: World, account: number, kinds: ReadonlyArray<Kind>, via: number, priority?: Priority) => {
  const sent = kinds.map((kind) => newRequest(w, kind))
  const tag = `b${w.unique++}`
  const requests = sent.map((s, i) => ({ custom_id: `r${i}`, body: { model: `m-${account}`, messages: [{ role: "user", content: s.text }] } }))
  const created = await api(w, account, via).call("POST", "/v1/batches", { requests, metadata: { tag }, ...(priority === undefined ? {} : { priority }) })
  const runsAt = priority ?? DEFAULT_PRIORITY
  if (created.status === 200) {
    expect(created.body.priority, created.text).toBe(runsAt)
    w.batches.push({ id: created.body.id, account, requests: sent, priority: runsAt, startBy: created.body.expires_at * 1000 })
    await awaitClaim(w, created.body.id, account)
  } else if (queuedAway(created) && mayBeAway(w, via)) w.unanswered.set(tag, { _tag: "batch", account, requests: sent, priority: runsAt })
  else expect([401, 403, 429], created.text).toContain(created.status)
}

export const submit = (account: number, kinds: ReadonlyArray<Kind>, via: number, priority?: Priority) =>
  command(`submit(${ACCOUNTS[account]}, ${kinds.join(",")}${priority === undefined ? "" : `, ${priority}`}, via ${via})`, (w) =>
    createBatch(w, account, kinds, via, priority),
  )

export const cancel = (pick: number, via: number) =>
  command(`cancel(#${pick}, via ${via})`, async (w) => {
    const batch = w.batches[pick % w.batches.length]
    if (batch === undefined) return
    w.mayHaveEnded.add(batch.id)
    const answer = await api(w, batch.account, via).call("POST", `/v1/batches/${batch.id}/cancel`)
    if (!(queuedAway(answer) && mayBeAway(w, via))) expect([200, 401, 429], answer.text).toContain(answer.status)
  })

/**
 * A backlog of `n` paced rows at `priority` (high or background), and behind it, in the same step, a
 * standard batch of two rows: the backlog keeps the account's slots busy for seconds, so the order rows
 * start in between priorities shows (priorityChecks.ts).
 */
export const contend = (account: number, n: number, priority: Priority, via: number) =>
  command(`contend(${ACCOUNTS[account]}, ${n} paced ${priority} then 2 standard, via ${via})`, async (w) => {
    await createBatch(w, account, Array.from({ length: n }, (): Kind => "paced"), via, priority)
    await createBatch(w, account, ["ok", "ok"], via)
  })

/** A revoked key's or suspended account's batches and responses fail: the rows they have not started no longer wait. */
const ownerChanges = (w: World, account: number) => {
  for (const b of w.batches) if (b.account === account) w.mayHaveEnded.add(b.id)
  for (const r of w.responses) if (r.account === account) w.mayHaveEnded.add(r.id)
}

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
    ownerChanges(w, account)
    // Refused, it may have been stored all the same: a later call may still answer 401, which is allowed anyway.
    if (!(await adminCall(w, "POST", `/admin/v1/keys/${w.keys[account]!.keyId}/revoke`))) return
    const key = await api(w).admin("POST", `/admin/v1/accounts/${ACCOUNTS[account]}/keys`, {})
    if (adminAway(key) && mayBeAway(w, 0)) return
    expect(key.status, key.text).toBe(200)
    w.keys[account] = { ...w.keys[account]!, key: key.body.key, keyId: key.body.id }
  })

export const suspend = (account: number) =>
  command(`suspend(${ACCOUNTS[account]})`, async (w) => {
    ownerChanges(w, account)
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
