import { expect } from "vitest"
import { DEFAULT_PRIORITY, type Priority } from "../../../src/domain/scheduling/priority.js"
import { windowMs } from "../../../src/domain/stream/events.js"
import { command } from "./command.js"
import { awaitClaim } from "./priorityChecks.js"
import { sendFlex } from "./flex.js"
import { ACCOUNTS, type Flex, type Kind, type Stream, type World, api, mayBeAway, newRequest, queuedAway } from "./world.js"

const withPriority = (priority: Priority | undefined) => (priority === undefined ? {} : { priority })
const named = (priority: Priority | undefined) => (priority === undefined ? "" : `, ${priority}`)

/** A background response at `priority` (none sent: standard), queued for a batch slot and answered at once. */
export const background = (account: number, kind: Kind, via: number, priority?: Priority) =>
  command(
    `background(${ACCOUNTS[account]}, ${kind}${named(priority)}, via ${via})`,
    async (w) => {
      const sent = newRequest(w, kind)
      const body = { model: `m-${account}`, input: sent.text, background: true, metadata: { tag: sent.tag }, ...withPriority(priority) }
      const created = await api(w, account, via).call("POST", "/v1/responses", body)
      const runsAt = priority ?? DEFAULT_PRIORITY
      if (created.status === 200) {
        expect(created.body).toMatchObject({ object: "response", status: "in_progress", background: true, output: [], priority: runsAt })
        const startBy = created.body.created_at * 1000 + windowMs["24h"]
        w.responses.push({ id: created.body.id, account, sent, stream: null, flex: false, priority: runsAt, startBy })
        await awaitClaim(w, created.body.id, account)
      } else if (queuedAway(created) && mayBeAway(w, via)) {
        w.unanswered.set(sent.tag, { _tag: "response", account, sent, stream: null, priority: runsAt })
      } else {
        // No batch access (a standard account) is 403.
        expect([401, 403, 429], created.text).toContain(created.status)
      }
    },
  )

/** A stream whose items run at `priority` (none sent: standard) unless they name their own. */
export const createStream = (account: number, window: "15m" | "1h" | "24h", via: number, priority?: Priority) =>
  command(
    `createStream(${ACCOUNTS[account]}, ${window}${named(priority)}, via ${via})`,
    async (w) => {
      const made = await api(w, account, via).call("POST", "/v1/streams", { name: `s${w.unique++}`, window, ...withPriority(priority) })
      const runsAt = priority ?? DEFAULT_PRIORITY
      if (made.status === 201) {
        expect(made.body).toMatchObject({ object: "stream", window, status: "open", total_items: 0, priority: runsAt })
        w.streams.push({ id: made.body.id, account, closed: false, archived: false, priority: runsAt, window })
      } else if (!(queuedAway(made) && mayBeAway(w, via))) {
        expect([401, 403, 429], made.text).toContain(made.status)
      }
    },
  )

/** An item of a stream, at its own `priority` or else its stream's: answered at once while the stream is open, refused with 409 once it is closed. */
export const addItem = (pick: number, kind: Kind, via: number, priority?: Priority) =>
  command(
    `addItem(stream #${pick}, ${kind}${named(priority)}, via ${via})`,
    async (w) => {
      const stream = w.streams[pick % w.streams.length]
      if (stream === undefined) return
      const sent = newRequest(w, kind)
      const metadata = { stream_id: stream.id, custom_id: sent.tag, tag: sent.tag }
      const body = { model: `m-${stream.account}`, input: sent.text, metadata, ...withPriority(priority) }
      const created = await api(w, stream.account, via).call("POST", "/v1/responses", body)
      const what = `item of ${stream.id} (closed: ${stream.closed}): ${created.text}`
      const runsAt = priority ?? stream.priority
      if (created.status === 200) {
        expect(stream.closed, what).not.toBe(true)
        expect(created.body, what).toMatchObject({ object: "response", status: "in_progress", metadata: { stream_id: stream.id }, priority: runsAt })
        const startBy = created.body.created_at * 1000 + windowMs[stream.window]
        w.responses.push({ id: created.body.id, account: stream.account, sent, stream: stream.id, flex: false, priority: runsAt, startBy })
        await awaitClaim(w, created.body.id, stream.account)
      } else if (created.status === 409) {
        expect(stream.closed, what).not.toBe(false)
        expect(created.body.error.message, what).toMatch(new RegExp(`^Stream '${stream.id}' is (cancelled|archived): it takes no new items$`))
      } else if (queuedAway(created) && mayBeAway(w, via)) {
        w.unanswered.set(sent.tag, { _tag: "response", account: stream.account, sent, stream: stream.id, priority: runsAt })
      } else {
        expect([401, 403, 429], what).toContain(created.status)
      }
    },
  )

/** OpenAI's cancel or sference's DELETE: a final response is answered unchanged, an unfinished one reads cancelled or in_progress while its call runs. */
export const cancelResponse = (pick: number, how: "cancel" | "delete", via: number) =>
  command(`cancelResponse(#${pick}, ${how}, via ${via})`, async (w) => {
    const queued = w.responses.filter((r) => !r.flex)
    const response = queued[pick % queued.length]
    if (response === undefined) return
    w.mayHaveEnded.add(response.id)
    const path = `/v1/responses/${response.id}`
    const answer = await (how === "cancel" ? api(w, response.account, via).call("POST", `${path}/cancel`) : api(w, response.account, via).call("DELETE", path))
    if (answer.status === 200) {
      if (response.final !== undefined) expect(answer.body, `a cancel of final ${response.id}`).toEqual(response.final)
      else expect(["in_progress", "cancelled", "completed", "incomplete", "failed"], answer.text).toContain(answer.body.status)
    } else if (!(queuedAway(answer) && mayBeAway(w, via))) {
      expect([401, 429], answer.text).toContain(answer.status)
    }
  })

/** Cancels or archives a stream: no new items, its items not yet started cancelled; an archived one takes no change (409). */
export const closeStream = (pick: number, status: "cancelled" | "archived", via: number) =>
  command(`closeStream(#${pick}, ${status}, via ${via})`, async (w) => {
    const stream: Stream | undefined = w.streams[pick % w.streams.length]
    if (stream === undefined) return
    for (const r of w.responses) if (r.stream === stream.id) w.mayHaveEnded.add(r.id)
    const answer = await api(w, stream.account, via).call("PATCH", `/v1/streams/${stream.id}`, { status })
    const what = `${status} ${stream.id} (closed: ${stream.closed}, archived: ${stream.archived}): ${answer.text}`
    if (answer.status === 200) {
      expect(answer.body.status, what).toBe(stream.archived === true ? "archived" : status)
      stream.closed = true
      if (answer.body.status === "archived") stream.archived = true
    } else if (answer.status === 409) {
      expect(status, what).toBe("cancelled")
      expect(stream.archived, what).not.toBe(false)
      expect(answer.body.error.message, what).toBe(`Stream '${stream.id}' is archived: an archived stream is final and takes no change`)
      stream.closed = true
      stream.archived = true
    } else if (queuedAway(answer) && mayBeAway(w, via)) {
      if (stream.closed !== true) stream.closed = undefined
      if (status === "archived" && stream.archived !== true) stream.archived = undefined
    } else {
      expect([401, 403, 429], what).toContain(answer.status)
    }
  })

/** A flex request, left waiting for a slot while the next commands run; an account that may be standard would be served outside the slots. */
export const flex = (account: number, kind: Kind, endpoint: Flex["endpoint"], waitS: number, via: number) =>
  command(
    `flex(${ACCOUNTS[account]}, ${kind}, ${endpoint}, wait ${waitS}s, via ${via})`,
    async (w) => sendFlex(w, account, kind, endpoint, waitS, via),
    (w) => !w.maybeStandard.has(account),
  )

/** A flex request's client goes away: if it had not started, it never runs. */
export const abandonFlex = (pick: number) =>
  command(`abandonFlex(#${pick})`, async (w) => {
    const waiting = w.flexes.filter((f) => f.end === undefined)
    waiting[pick % waiting.length]?.abort.abort()
  })
