import { expect } from "vitest"
import type { client } from "../client.js"
import { type QueuedResponse, FINAL_RESPONSE, type World, answerTo, mayBeAway, queuedAway } from "./world.js"

export const outputText = (response: any): string =>
  (response.output ?? [])
    .filter((item: any) => item.type === "message")
    .flatMap((item: any) => item.content)
    .filter((part: any) => part.type === "output_text")
    .map((part: any) => part.text)
    .join("")

/** Whether a final response's call ran to an answer: its completion is in the feed as `completed`. */
export const answered = (response: any) => response.status === "completed" || response.status === "incomplete" || (response.status === "cancelled" && outputText(response) !== "")

/** Every response an account's list shows through `via`, newest first; undefined when the read was refused. */
export const listResponses = async (w: World, reader: ReturnType<typeof client>, via: number): Promise<Array<any> | undefined> => {
  const all: Array<any> = []
  for (let after = ""; ; ) {
    const page = await reader.call("GET", `/v1/responses?limit=100${after}`)
    if (page.status !== 200) {
      if (!(queuedAway(page) && mayBeAway(w, via))) expect([401, 429], `instance #${via}: ${page.text}`).toContain(page.status)
      return undefined
    }
    all.push(...page.body.data)
    if (!page.body.has_more) return all
    after = `&after=${page.body.last_id}`
  }
}

/** The tracked response a listed one is, taking on one whose create was answered only by a cut instance. */
const trackedOf = (w: World, account: number, shown: any): QueuedResponse => {
  const known = w.responses.find((r) => r.id === shown.id)
  if (known !== undefined) return known
  const tag = shown.metadata?.tag
  const unanswered = w.unanswered.get(tag)
  expect(unanswered?._tag, `a response the test never created: ${JSON.stringify(shown)}`).toBe("response")
  if (unanswered?._tag !== "response") throw new Error("unreachable")
  w.unanswered.delete(tag)
  const adopted: QueuedResponse = {
    id: shown.id,
    account,
    sent: unanswered.sent,
    stream: unanswered.stream,
    flex: false,
    priority: unanswered.priority,
    startBy: undefined,
  }
  w.responses.push(adopted)
  // Created while its instance was cut off, at a moment the test does not know: not judged as waiting.
  w.mayHaveEnded.add(shown.id)
  return adopted
}

/**
 * A Response as the API shows it: in_progress until its one-row batch is final, and once final the same
 * ever after; `cancelled` exactly when its batch was; a completed one is its own request's answer, from
 * a request the upstream saw.
 */
export const checkResponseObject = (w: World, response: QueuedResponse, shown: any) => {
  expect(shown.id).toBe(response.id)
  expect(shown.background, shown.id).toBe(response.stream === null && !response.flex)
  // Only a queued response waited among priorities: a flex one shows none.
  expect(shown.priority, shown.id).toBe(response.priority)
  if (response.stream !== null) expect(shown.metadata?.stream_id).toBe(response.stream)
  if (FINAL_RESPONSE.has(shown.status)) {
    // The log was read before the API: the batch may have become final in between.
    if (response.finalStatus !== undefined) {
      expect(shown.status === "cancelled", `${shown.id} reads ${shown.status}; its batch: ${response.finalStatus}`).toBe(response.finalStatus === "batch_cancelled")
    }
    if (response.final === undefined) response.final = shown
    else expect(shown).toEqual(response.final)
  } else {
    expect(shown.status, shown.id).toBe("in_progress")
    expect(response.final, `${shown.id} read final, then ${shown.status}`).toBeUndefined()
  }
  if (outputText(shown) !== "") {
    expect(outputText(shown)).toBe(answerTo(response.sent))
    expect(w.upstreams[response.account]!.calls(response.sent.text), `${shown.id} has an answer, but the upstream never saw it`).toBeGreaterThanOrEqual(1)
  }
}

/**
 * The account's responses as instance `via` lists them: every one the test queued (background or a
 * stream's item) and nothing else; a flex Response is never listed. Answers the listed ones by id.
 */
export const checkResponseList = (w: World, account: number, listed: ReadonlyArray<any>): Map<string, any> => {
  const byId = new Map<string, any>()
  for (const shown of listed) {
    const response = trackedOf(w, account, shown)
    expect(response.flex, `a flex Response is listed: ${shown.id}`).toBe(false)
    expect(byId.has(shown.id), `${shown.id} listed twice`).toBe(false)
    byId.set(shown.id, shown)
    checkResponseObject(w, response, shown)
  }
  for (const response of w.responses) {
    if (response.account === account && !response.flex) expect(byId.has(response.id), `${response.id} is not listed`).toBe(true)
  }
  return byId
}

/** A flex Response, read by the id its answer gave: what the answer said, since it was final when answered. */
export const checkFlexResponse = async (w: World, response: QueuedResponse, reader: ReturnType<typeof client>, via: number) => {
  const got = await reader.call("GET", `/v1/responses/${response.id}`)
  if (got.status === 200) return checkResponseObject(w, response, got.body)
  if (!(queuedAway(got) && mayBeAway(w, via))) expect([401, 429], `instance #${via}: ${got.text}`).toContain(got.status)
}
