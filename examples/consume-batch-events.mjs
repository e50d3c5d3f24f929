// A durable consumer of every batch event (`batch.*.>` on the SLUICE stream) that survives restarts of
// itself and of nats-server without missing or repeating an event. Each message is written once, in
// stream order, to an output file of JSON lines, joined again when the log stored it in parts, with
// its link in its subject's hash chain checked.
//
// Usage (from the Sluice checkout, after npm ci):
//   NATS_URL=nats://127.0.0.1:4222 node examples/consume-batch-events.mjs --out events.jsonl [--durable NAME]
//
// Each output line: {"seq", "subject", "type", "time", "sha256", "chain", "event"}; `chain` is "ok",
// "unchained" (a message written before chains existed) or what is wrong with the link. The file is
// also this consumer's memory: on start it resumes after the last line's seq, with each subject's last
// link. Parts of a message not yet whole wait in <out>.parts/.
//
// Why it holds: the consumer is durable (the server keeps its position across restarts of both) with
// explicit acks and one unacknowledged message at a time, so messages arrive in stream order and one
// that was delivered but not acked comes again, first. A message is acked only after its line (or its
// part, in the spool) is on disk, and a message at or before the last line's seq is acked unwritten:
// a crash between writing and acking repeats the delivery, never the line.
import { createHash } from "node:crypto"
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from "node:fs"
import { parseArgs } from "node:util"
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"

const STREAM = "SLUICE"
const FILTER = "batch.*.>"
const ACK_WAIT_MS = 5_000
// A pull or an ack that has not settled by then is taken as lost with a connection: the loop starts over.
const STALL_MS = 15_000

const { values } = parseArgs({ options: { out: { type: "string" }, durable: { type: "string", default: "batch-events" } } })
if (values.out === undefined) {
  console.error("usage: NATS_URL=… node examples/consume-batch-events.mjs --out events.jsonl [--durable NAME]")
  process.exit(2)
}
const out = values.out
const spool = `${out}.parts`
mkdirSync(spool, { recursive: true })

/** What the output file says: the last seq written and each subject's last link. A torn last line is cut off. */
const resume = () => {
  const heads = new Map()
  let lastSeq = 0
  if (!existsSync(out)) return { heads, lastSeq }
  const text = readFileSync(out, "utf8")
  const whole = text.lastIndexOf("\n") + 1
  if (whole < text.length) truncateSync(out, Buffer.byteLength(text.slice(0, whole)))
  for (const line of text.slice(0, whole).split("\n")) {
    if (line === "") continue
    const { seq, subject, sha256 } = JSON.parse(line)
    lastSeq = Math.max(lastSeq, seq)
    if (sha256 !== null) heads.set(subject, sha256)
  }
  return { heads, lastSeq }
}
const state = resume()

const append = (line) => {
  const fd = openSync(out, "a")
  try {
    writeSync(fd, `${line}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

const linkOf = (prev, subject, data) => createHash("sha256").update(`${prev}\n${subject}\n`).update(data).digest("hex")

/** The message's chain link checked against the previous message on its subject. */
const checkChain = (subject, headers, data) => {
  const link = headers?.get("Sluice-Sha256") || undefined
  if (link === undefined) return { sha256: null, chain: "unchained" }
  const prev = headers.get("Sluice-Prev-Sha256") || ""
  const expected = state.heads.get(subject) ?? ""
  if (prev !== expected) return { sha256: link, chain: `does not follow the previous message on its subject (its previous link ${prev || "none"}, the last one seen ${expected || "none"})` }
  if (linkOf(prev, subject, data) !== link) return { sha256: link, chain: "its data does not match its link: altered" }
  return { sha256: link, chain: "ok" }
}

const decoded = (data) => {
  try {
    return JSON.parse(new TextDecoder().decode(data))
  } catch {
    return null
  }
}

/** A whole message: written as a line, then its parts dropped from the spool. */
const write = (m, data, parts, problem) => {
  const { sha256, chain } = problem === undefined ? checkChain(m.subject, m.headers, data) : { sha256: m.headers.get("Sluice-Sha256") || null, chain: problem }
  const event = problem === undefined ? decoded(data) : null
  const time = new Date(Number(m.timestampNanos / 1_000_000n)).toISOString()
  append(JSON.stringify({ seq: m.seq, subject: m.subject, type: event?.type ?? null, time, sha256, chain, event }))
  state.lastSeq = m.seq
  if (sha256 !== null) state.heads.set(m.subject, sha256)
  for (const part of parts) rmSync(part, { force: true })
  if (chain !== "ok" && chain !== "unchained") console.error(`seq ${m.seq} on ${m.subject}: ${chain}`)
}

/** A part: kept in the spool until the last one comes; answers the whole message's data, or undefined. */
const spoolPart = (m, header) => {
  const [id, i, n] = header.split(" ")
  writeFileSync(`${spool}/${id}.${i}`, m.data)
  if (Number(i) < Number(n) - 1) return { data: undefined, parts: [] }
  const parts = Array.from({ length: Number(n) }, (_, k) => `${spool}/${id}.${k}`)
  const missing = parts.filter((p) => !existsSync(p))
  if (missing.length > 0) return { data: new Uint8Array(), parts, problem: `${missing.length} of its ${n} parts never came: removed` }
  return { data: Buffer.concat(parts.map((p) => readFileSync(p))), parts }
}

const handle = async (m) => {
  if (m.seq <= state.lastSeq) console.error(`seq ${m.seq} delivered again: already written`)
  else {
    const header = m.headers?.get("Sluice-Chunk") || ""
    if (header === "") write(m, m.data, [])
    else {
      const { data, parts, problem } = spoolPart(m, header)
      if (data !== undefined) write(m, data, parts, problem)
    }
  }
  // Acked after the line (or part) is on disk; if the ack is lost the message comes again and is skipped.
  await m.ackAck().catch(() => false)
}

/** `promise`, or a rejection once it has not settled within `ms`. */
const within = (promise, ms, what) => {
  let timer
  const stalled = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle in ${ms} ms`)), ms)
  })
  return Promise.race([promise, stalled]).finally(() => clearTimeout(timer))
}

const servers = (process.env.NATS_URL ?? "nats://127.0.0.1:4222").split(",")
console.error(`connecting to ${servers.join(", ")}`)
// Started while nats-server is down (restarting, or not up yet), it waits for it instead of exiting.
const nc = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: true })
let stopping = false
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => (stopping = true))

/** The durable consumer, made once: later runs (and other copies of this program) find it by its name. */
const ensureConsumer = async () => {
  const jsm = await jetstreamManager(nc)
  const found = await jsm.consumers.info(STREAM, values.durable).catch(() => undefined)
  if (found !== undefined) return
  await jsm.consumers.add(STREAM, {
    durable_name: values.durable,
    filter_subject: FILTER,
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.Explicit,
    ack_wait: ACK_WAIT_MS * 1_000_000,
    max_ack_pending: 1,
  })
}

console.error(`consuming ${FILTER} as ${values.durable}, after seq ${state.lastSeq}, into ${out}`)
while (!stopping) {
  try {
    await ensureConsumer()
    const consumer = await jetstream(nc).consumers.get(STREAM, values.durable)
    while (!stopping) {
      // A message given up on here was not acked, so it comes again, first (and is skipped if written).
      const m = await within(consumer.next({ expires: 1_000 }), STALL_MS, "a pull")
      if (m !== null) await within(handle(m), STALL_MS, "an ack")
    }
  } catch (error) {
    // The server restarting, the stream not made yet, a pull or an ack lost with a connection: start again.
    if (!stopping) console.error(`consumer: ${error instanceof Error ? error.message : String(error)}; retrying`)
    await new Promise((r) => setTimeout(r, 500))
  }
}
await nc.drain()
