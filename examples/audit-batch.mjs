// Prints one batch's history from the SLUICE stream, oldest first: one event per line, as stored.
// Usage (from the Sluice checkout, after npm ci): NATS_URL=nats://127.0.0.1:4222 node examples/audit-batch.mjs <batch_id>
import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"

const batchId = process.argv[2]
if (batchId === undefined) {
  console.error("usage: node examples/audit-batch.mjs <batch_id>")
  process.exit(2)
}
const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222" })
await jetstreamManager(nc) // fails fast when JetStream is off
// An ordered consumer: ephemeral, in stream order, no acks; one filter subject, as nats-server 2.9 allows.
const consumer = await jetstream(nc).consumers.get("SLUICE", { filter_subjects: `batch.${batchId}.>` })
if ((await consumer.info(true)).num_pending === 0) {
  console.error(`no events for ${batchId} (unknown, or deleted: DELETE purges a batch's history)`)
} else {
  // A message larger than the part size is stored as n consecutive parts headed `Sluice-Chunk: <id> <i> <n>`.
  const parts = new Map()
  for await (const m of await consumer.consume()) {
    const chunk = m.headers?.get("Sluice-Chunk") ?? ""
    let data = m.data
    if (chunk !== "") {
      const [id, , n] = chunk.split(" ")
      const got = [...(parts.get(id) ?? []), m.data]
      parts.set(id, got)
      data = got.length === Number(n) ? Buffer.concat(got) : undefined
      if (data !== undefined) parts.delete(id)
    }
    if (data !== undefined) console.log(`${m.seq} ${m.subject} ${new TextDecoder().decode(data)}`)
    if (m.info.pending === 0) break
  }
}
await nc.close()
