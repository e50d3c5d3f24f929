import { JetStreamApiCodes } from "@nats-io/jetstream"
import { createInbox, headers as natsHeaders, type Msg, type NatsConnection } from "@nats-io/transport-node"
import type { RawAppend, RawOutcome } from "./chunking.js"
import { WrongLastSequence } from "./EventLog.js"

/** nats.js's own default for a JetStream publish's ack. */
const ACK_TIMEOUT_MS = 5_000
const WINDOW = 256
/** JSStreamDuplicateMessageConflict, "duplicate message id is in process" (not in nats.js 3.4's JetStreamApiCodes). */
const DUPLICATE_IN_PROCESS = 10158
const text = new TextDecoder()

/** The publish went out, or may have, and no answer says whether the stream stored it. */
export class OutcomeUnknownError extends Error {}

interface Waiting {
  readonly subject: string
  readonly expected: number
  readonly sentAt: number
  readonly settle: Settle
}

/** An outcome the log stored or refused as a message (WrongLastSequence), or a failure of the publish itself. */
interface Settle {
  (outcome: RawOutcome): void
  (outcome: undefined, failure: Error): void
}

interface Ack {
  readonly seq?: number
  readonly duplicate?: boolean
  readonly error?: { readonly err_code?: number; readonly description?: string }
}

export interface JetStreamPublisher {
  /** Publishes in input order with at most WINDOW acks outstanding; rejects with the first failure, once none is outstanding. */
  readonly publishAll: (messages: ReadonlyArray<RawAppend>) => Promise<Array<RawOutcome>>
  readonly close: () => void
}

/**
 * JetStream publishes whose acks come back on one subscription of the connection's own. nats.js
 * makes each publish a request of its own, with a timer, a promise and an Error it builds to reject
 * the promise it has just resolved: a cost paid on every publish, so on every row's events on NATS.
 * The protocol is the same: a publish with a reply subject, answered by the stream with its ack, or
 * by the server with a no-responders status while JetStream is not ready.
 */
export const makeJetStreamPublisher = (nc: NatsConnection): JetStreamPublisher => {
  const prefix = `${createInbox()}.`
  // In send order, which is deadline order: every publish has the same timeout.
  const waiting = new Map<number, Waiting>()
  let nextId = 0
  const failAll = (error: OutcomeUnknownError) => {
    const lost = [...waiting.values()]
    waiting.clear()
    for (const w of lost) w.settle(undefined, error)
  }

  const received = (msg: Msg) => {
    const id = Number(msg.subject.slice(prefix.length))
    const w = waiting.get(id)
    if (w === undefined) return
    waiting.delete(id)
    if (msg.headers?.hasError === true) {
      // No responders: nothing took the message. Any other status leaves its fate open.
      if (msg.headers.code === 503) return w.settle(undefined, new Error("jetstream is not enabled (no responders)"))
      return w.settle(undefined, new OutcomeUnknownError(msg.headers.status))
    }
    let ack: Ack
    try {
      ack = JSON.parse(text.decode(msg.data)) as Ack
    } catch {
      return w.settle(undefined, new OutcomeUnknownError("invalid ack response"))
    }
    if (ack.error !== undefined) {
      if (ack.error.err_code === JetStreamApiCodes.StreamWrongLastSequence) {
        return w.settle(new WrongLastSequence({ subject: w.subject, expected: w.expected }))
      }
      // 2.11+ answers a message id proposed but not stored yet with this error where 2.10 answers a
      // duplicate at seq 0 (below): the same unknown outcome.
      if (ack.error.err_code === DUPLICATE_IN_PROCESS) return w.settle(undefined, new OutcomeUnknownError(ack.error.description ?? "duplicate message id is in process"))
      return w.settle(undefined, new Error(ack.error.description ?? "publish refused"))
    }
    if (typeof ack.seq !== "number") return w.settle(undefined, new OutcomeUnknownError("invalid ack response"))
    // A leader answers a message id it has proposed but not stored yet as a duplicate at seq 0: it may
    // never store it (a leader cut off from its cluster), so that says nothing about the outcome.
    if (ack.duplicate === true && ack.seq === 0) return w.settle(undefined, new OutcomeUnknownError("duplicate of a publish not stored yet"))
    w.settle({ seq: ack.seq, duplicate: ack.duplicate === true })
  }
  const subscription = nc.subscribe(`${prefix}*`, {
    callback: (error, msg) => (error === null ? received(msg) : failAll(new OutcomeUnknownError(error.message))),
  })
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [id, w] of waiting) {
      if (w.sentAt + ACK_TIMEOUT_MS > now) break
      waiting.delete(id)
      w.settle(undefined, new OutcomeUnknownError("timeout"))
    }
  }, 500)
  sweep.unref()

  const publishOne = (m: RawAppend, settle: Settle) => {
    const id = nextId++
    const h = natsHeaders()
    if (m.msgId !== undefined) h.set("Nats-Msg-Id", m.msgId)
    if (m.expectLastSubjectSeq !== undefined) h.set("Nats-Expected-Last-Subject-Sequence", String(m.expectLastSubjectSeq))
    if (m.headers !== undefined) for (const [k, v] of Object.entries(m.headers)) h.set(k, v)
    waiting.set(id, { subject: m.subject, expected: m.expectLastSubjectSeq ?? 0, sentAt: Date.now(), settle })
    try {
      nc.publish(m.subject, m.data, { reply: `${prefix}${id}`, headers: h })
    } catch (error) {
      waiting.delete(id)
      settle(undefined, error instanceof Error ? error : new Error(String(error)))
    }
  }

  const publishAll = (messages: ReadonlyArray<RawAppend>) =>
    new Promise<Array<RawOutcome>>((resolve, reject) => {
      const outcomes: Array<RawOutcome> = new Array(messages.length)
      let sent = 0
      let settled = 0
      let failure: Error | undefined
      const pump = () => {
        while (failure === undefined && sent < messages.length && sent - settled < WINDOW) {
          const i = sent++
          publishOne(messages[i]!, (outcome?: RawOutcome, error?: Error) => {
            settled++
            if (outcome !== undefined) outcomes[i] = outcome
            // One publish whose outcome is unknown makes the whole append's unknown.
            else if (failure === undefined || (error instanceof OutcomeUnknownError && !(failure instanceof OutcomeUnknownError))) {
              failure = error ?? new Error("publish failed")
            }
            if (settled === sent && (failure !== undefined || sent === messages.length)) {
              if (failure !== undefined) reject(failure)
              else resolve(outcomes)
            } else pump()
          })
        }
      }
      if (messages.length === 0) resolve(outcomes)
      else pump()
    })

  return {
    publishAll,
    close: () => {
      clearInterval(sweep)
      subscription.unsubscribe()
      failAll(new OutcomeUnknownError("connection closed"))
    },
  }
}
