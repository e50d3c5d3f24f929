import { expect } from "vitest"
import { storedLogByAggregate } from "../storedEvents.js"
import { adoptBatches, checkBatchRead } from "./batchChecks.js"
import { checkFeed, readFeed } from "./feedChecks.js"
import { checkFlexes } from "./flex.js"
import { checkLog } from "./logChecks.js"
import { checkPriorities, noteClaims } from "./priorityChecks.js"
import { checkFlexResponse, checkResponseList, listResponses } from "./responseChecks.js"
import { checkStream } from "./streamChecks.js"
import { ACCOUNTS, ACCOUNT_CONCURRENCY, MODEL_SLOTS, type World, expectCallsWithinBound, reader, received } from "./world.js"

/** One account's work as instance `via` shows it: its batches, its responses, its feeds and its streams, each against the others. */
const checkAccountThrough = async (w: World, account: number, via: number) => {
  const read = reader(w, account, via)
  await adoptBatches(w, account, read)
  const rows = new Map<string, ReadonlyArray<any>>()
  for (const batch of w.batches) {
    if (batch.account !== account) continue
    const shown = await checkBatchRead(w, batch, read, via)
    if (shown !== undefined) rows.set(batch.id, shown)
  }
  for (const response of w.responses) if (response.account === account && response.flex) await checkFlexResponse(w, response, read, via)
  const listed = await listResponses(w, read, via)
  if (listed === undefined) return
  const responses = checkResponseList(w, account, listed)
  const outside = await readFeed(w, read, via, null)
  if (outside !== undefined) checkFeed(w, account, null, outside, { rows, responses })
  for (const stream of w.streams) {
    if (stream.account !== account) continue
    const feed = await readFeed(w, read, via, stream.id)
    if (feed !== undefined) checkFeed(w, account, stream.id, feed, { rows, responses })
    await checkStream(w, stream, read, via, responses, feed)
  }
}

/**
 * The invariants, after every step: on what the log holds, on what every instance shows of every
 * account's work (each with the priority it was created at), and on what the upstreams saw, the order
 * rows started in between priorities included.
 */
export const checkInvariants = async (w: World) => {
  // The log first: a revoked key or a used-up quota may not read through the API.
  const log = await storedLogByAggregate({ dataDir: w.sluices[0]!.dataDir, natsUrl: w.nats?.url })
  noteClaims(w, log.lanes)
  checkLog(w, log.events)
  for (const via of w.sluices.keys()) for (const account of ACCOUNTS.keys()) await checkAccountThrough(w, account, via)
  checkFlexes(w)
  for (const batch of w.batches) for (const sent of batch.requests) expectCallsWithinBound(w, batch.account, sent, batch.until, batch.id)
  for (const response of w.responses) expectCallsWithinBound(w, response.account, response.sent, response.until, response.id)
  for (const flex of w.flexes) expectCallsWithinBound(w, flex.account, flex.sent, flex.until, `flex '${flex.sent.text}'`)
  for (const [account, upstream] of w.upstreams.entries()) {
    // One model per account: its upstream never had more calls open than the model's slots or the account's concurrency, flex requests included.
    const peak = upstream.peak()
    expect(upstream.maxInFlight(), `${ACCOUNTS[account]}: calls open at once at ${peak?.at}: ${peak?.open.join(", ")}`).toBeLessThanOrEqual(Math.min(MODEL_SLOTS, ACCOUNT_CONCURRENCY))
    // A paused or waiting account's batches, responses and flex requests start nothing.
    const since = w.held.get(account)
    if (since !== undefined) expect(received(w, account), `${ACCOUNTS[account]}: requests received since it was held (${since} then)`).toBeLessThanOrEqual(since + ACCOUNT_CONCURRENCY)
  }
  await checkPriorities(w, log.events)
}
