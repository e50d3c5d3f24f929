import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect, headers as natsHeaders } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { join } from "node:path"

/** A message as the log stores it, read past the service's adapter: its headers, and its data as stored. */
export interface RawMessage {
  readonly seq: number
  readonly subject: string
  readonly data: Buffer
  readonly headers: Record<string, string>
}

export interface LogPlace {
  readonly dataDir: string
  readonly natsUrl?: string | undefined
}

/** Every stored message whose subject starts with `prefix`, in log order, from the embedded file or the `SLUICE` stream. */
export const rawMessages = async (where: LogPlace, prefix: string): Promise<Array<RawMessage>> => {
  if (where.natsUrl === undefined) {
    const db = new Database(join(where.dataDir, "log.sqlite"), { readonly: true })
    try {
      const rows = db.prepare("SELECT seq, subject, data, headers FROM messages WHERE substr(subject, 1, ?) = ? ORDER BY seq").all(prefix.length, prefix) as Array<{
        seq: number
        subject: string
        data: Buffer
        headers: string | null
      }>
      return rows.map((r) => ({ seq: r.seq, subject: r.subject, data: r.data, headers: JSON.parse(r.headers ?? "{}") }))
    } finally {
      db.close()
    }
  }
  const nc = await connect({ servers: where.natsUrl })
  try {
    const jsm = await jetstreamManager(nc)
    const { state } = await jsm.streams.info("SLUICE")
    const out: Array<RawMessage> = []
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await jsm.streams.getMessage("SLUICE", { seq }).catch(() => null)
      if (m === null || !m.subject.startsWith(prefix)) continue
      const headers = Object.fromEntries((m.header?.keys() ?? []).map((k) => [k, m.header!.get(k)]))
      out.push({ seq, subject: m.subject, data: Buffer.from(m.data), headers })
    }
    return out
  } finally {
    await nc.close()
  }
}

/**
 * Stores other data in a message's place, as a forger would: in the embedded file in place; on NATS, where
 * a stored message cannot be edited, by deleting it and publishing the altered copy with its headers.
 * Answers the altered message's seq.
 */
export const alterMessage = async (where: LogPlace, message: RawMessage, data: Buffer): Promise<number> => {
  if (where.natsUrl === undefined) {
    const db = new Database(join(where.dataDir, "log.sqlite"))
    try {
      db.prepare("UPDATE messages SET data = ? WHERE seq = ?").run(data, message.seq)
    } finally {
      db.close()
    }
    return message.seq
  }
  const nc = await connect({ servers: where.natsUrl })
  try {
    await (await jetstreamManager(nc)).streams.deleteMessage("SLUICE", message.seq)
    const h = natsHeaders()
    for (const [k, v] of Object.entries(message.headers)) if (!k.startsWith("Nats-")) h.set(k, v)
    return (await jetstream(nc).publish(message.subject, data, { headers: h })).seq
  } finally {
    await nc.close()
  }
}
