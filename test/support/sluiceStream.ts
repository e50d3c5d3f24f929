import { createHash } from "node:crypto"
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect, type NatsConnection } from "@nats-io/transport-node"

export interface StreamMessage {
  readonly seq: number
  readonly subject: string
  /** When the log stored it, in ms since the epoch. */
  readonly at: number
  readonly data: Uint8Array
}

export interface LaneWindow {
  readonly seq: number
  readonly at: number
  readonly batchId: string
  readonly model: string
  readonly owner: string
  readonly lease: number
  readonly events: ReadonlyArray<{ readonly type: string; readonly row: number; readonly attempt: number }>
}

/** Every message of the SLUICE stream up to its last one now, through an ordered consumer (the stream leader's copy). */
export const readStream = async (servers: string | ReadonlyArray<string>): Promise<Array<StreamMessage>> => {
  const nc = await connect({ servers: typeof servers === "string" ? servers.split(",") : [...servers], timeout: 5_000 })
  try {
    return await readWith(nc)
  } finally {
    await nc.close()
  }
}

export const readWith = async (nc: NatsConnection): Promise<Array<StreamMessage>> => {
  const last = (await (await jetstreamManager(nc, { timeout: 5_000 })).streams.info("SLUICE")).state.last_seq
  const messages: Array<StreamMessage> = []
  if (last === 0) return messages
  const consumer = await jetstream(nc, { timeout: 5_000 }).consumers.get("SLUICE")
  for await (const m of await consumer.consume()) {
    messages.push({ seq: m.seq, subject: m.subject, at: Date.parse(m.timestamp), data: m.data })
    if (m.seq >= last) break
  }
  return messages
}

/** SHA-256 over every message's sequence, subject and data, in order. */
export const streamDigest = (messages: ReadonlyArray<StreamMessage>): string => {
  const hash = createHash("sha256")
  for (const m of messages) hash.update(`${m.seq}\n${m.subject}\n${m.data.length}\n`).update(m.data)
  return hash.digest("hex")
}

/** The lane windows among the messages; a chunked window's parts are not JSON alone and are left out. */
export const laneWindows = (messages: ReadonlyArray<StreamMessage>): Array<LaneWindow> =>
  messages.flatMap((m) => {
    if (!/^batch\.[^.]+\.lane\./.test(m.subject)) return []
    try {
      const w = JSON.parse(Buffer.from(m.data).toString("utf8"))
      if (w.type !== "lane_window") return []
      return [{ seq: m.seq, at: m.at, batchId: w.batch_id, model: w.model, owner: w.owner, lease: w.lease, events: w.events ?? [] }]
    } catch {
      return []
    }
  })

/** The lifecycle events of each batch (one message on `batch.<id>.<type>`), by batch id. */
export const lifecycleEvents = (messages: ReadonlyArray<StreamMessage>): Map<string, Array<string>> => {
  const events = new Map<string, Array<string>>()
  for (const m of messages) {
    const match = /^batch\.([^.]+)\.(batch_[a-z_]+)$/.exec(m.subject)
    if (match === null) continue
    events.set(match[1]!, [...(events.get(match[1]!) ?? []), match[2]!])
  }
  return events
}
