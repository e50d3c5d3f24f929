import { jetstream, jetstreamManager } from "@nats-io/jetstream"
import { connect, headers as natsHeaders } from "@nats-io/transport-node"
import Database from "better-sqlite3"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"
import { chatRow } from "../support/client.js"
import { withSluice } from "../support/withSluice.js"

/*
 * `sluice audit`: the history of a batch and of an account from the log, a batch as of a moment, and
 * `verify`, which checks every subject's hash chain and compares a rebuilt read model with the live one.
 * A tampered log (one event altered, another removed) is reported with the batch and both messages.
 */

const MODEL = "glm-5.3-flash"

interface Stored {
  readonly seq: number
  readonly subject: string
  readonly data: Buffer
  readonly headers: Record<string, string>
}

describe.each([
  { name: "the embedded log", log: "embedded" },
  { name: "NATS JetStream", log: "nats" },
] as const)("sluice audit, on $name", ({ log }) => {
  const f = withSluice({ log, lifetime: "test", simulator: { models: [MODEL] }, models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 1 }] })

  const audit = (args: ReadonlyArray<string>) =>
    runCli(["audit", ...args], { SLUICE_DATA_DIR: f.sluice.dataDir, ...(f.natsUrl === undefined ? {} : { NATS_URL: f.natsUrl }) })

  /** One batch's stored messages, raw, in order. */
  const stored = async (batchId: string): Promise<Array<Stored>> => {
    if (f.natsUrl === undefined) {
      const db = new Database(join(f.sluice.dataDir, "log.sqlite"), { readonly: true })
      try {
        return (db.prepare("SELECT seq, subject, data, headers FROM messages WHERE subject LIKE ? ORDER BY seq").all(`batch.${batchId}.%`) as Array<any>).map(
          (r) => ({ ...r, headers: JSON.parse(r.headers ?? "{}") }),
        )
      } finally {
        db.close()
      }
    }
    const nc = await connect({ servers: f.natsUrl })
    try {
      const jsm = await jetstreamManager(nc)
      const info = await jsm.streams.info("SLUICE")
      const out: Array<Stored> = []
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage("SLUICE", { seq }).catch(() => null)
        if (m === null || !m.subject.startsWith(`batch.${batchId}.`)) continue
        const headers = Object.fromEntries((m.header?.keys() ?? []).map((k) => [k, m.header!.get(k)]))
        out.push({ seq, subject: m.subject, data: Buffer.from(m.data), headers })
      }
      return out
    } finally {
      await nc.close()
    }
  }

  const alter = async (message: Stored, data: Buffer) => {
    if (f.natsUrl === undefined) {
      const db = new Database(join(f.sluice.dataDir, "log.sqlite"))
      db.prepare("UPDATE messages SET data = ? WHERE seq = ?").run(data, message.seq)
      db.close()
      return message.seq
    }
    // A stored JetStream message cannot be edited: a forger deletes it and publishes an altered copy with its headers.
    const nc = await connect({ servers: f.natsUrl })
    try {
      await (await jetstreamManager(nc)).streams.deleteMessage("SLUICE", message.seq)
      const h = natsHeaders()
      for (const [k, v] of Object.entries(message.headers)) if (!k.startsWith("Nats-")) h.set(k, v)
      return (await jetstream(nc).publish(message.subject, data, { headers: h })).seq
    } finally {
      await nc.close()
    }
  }

  const remove = async (message: Stored) => {
    if (f.natsUrl === undefined) {
      const db = new Database(join(f.sluice.dataDir, "log.sqlite"))
      db.prepare("DELETE FROM messages WHERE seq = ?").run(message.seq)
      db.close()
      return
    }
    const nc = await connect({ servers: f.natsUrl })
    await (await jetstreamManager(nc)).streams.deleteMessage("SLUICE", message.seq)
    await nc.close()
  }

  it("lists a batch's and an account's history, answers as of a moment, verifies a sound log, and reports an altered and a removed event", async () => {
    const sluice = await f.start()
    const api = f.api()
    const account = `acct_${Math.random().toString(36).slice(2, 8)}`
    expect((await api.admin("POST", "/admin/v1/accounts", { id: account, tier: "internal" })).status).toBe(200)
    const key = (await api.admin("POST", `/admin/v1/accounts/${account}/keys`, {})).body.key as string
    const owner = f.api(key)
    const created = await owner.call("POST", "/v1/batches", { requests: [0, 1, 2, 3, 4].map((i) => chatRow(`q-${i}`, `question ${i}`)) })
    expect(created.status, created.text).toBe(200)
    const id = created.body.id as string
    const done = await owner.waitFinal(id)
    const doomed = await owner.call("POST", "/v1/batches", { requests: [chatRow("d", "to delete")] })
    await owner.waitFinal(doomed.body.id)
    expect((await owner.call("DELETE", `/v1/batches/${doomed.body.id}`)).status).toBe(200)

    const history = await audit(["history", "--batch-id", id])
    expect(history.code, history.stderr).toBe(0)
    const types = history.stdout.trim().split("\n").map((l) => l.trim().split(/\s+/)[2])
    expect(types.slice(0, 3)).toEqual(["row_bodies", "rows_added", "batch_created"])
    expect(types.filter((t) => t === "row_completed")).toHaveLength(5)
    expect(types[types.length - 1]).toBe("batch_completed")
    expect(history.stdout).not.toContain("Simulated answer")
    const json = (await audit(["history", "--batch-id", id, "--json", "--bodies"])).stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(json.map((e) => e.type)).toEqual(types)
    // A lane window's events share its seq.
    expect(json.every((e, i) => i === 0 || e.seq >= json[i - 1].seq)).toBe(true)
    expect(JSON.stringify(json)).toContain("Simulated answer to: question 3")
    const accountLines = (await audit(["history", "--account-id", account])).stdout
    expect(accountLines).toContain("account_created")
    expect(accountLines).toContain("key_created")
    const tombstone = (await audit(["history", "--batch-id", doomed.body.id, "--json"])).stdout.trim().split("\n").map((l) => JSON.parse(l))
    expect(tombstone.map((e) => e.type)).toEqual(["batch_purged"])
    expect(Object.keys(tombstone[0].event.chain_heads)).toEqual(expect.arrayContaining([`batch.${doomed.body.id}.batch_completed`]))

    const now = (await audit(["as-of", "--batch-id", id, "--at", String(Math.floor(Date.now() / 1000))]))
    expect(now.code, now.stderr).toBe(0)
    expect(JSON.parse(now.stdout).batch).toEqual(done)
    expect(JSON.parse(now.stdout).results.map((r: any) => r.status)).toEqual(Array(5).fill("completed"))
    const before = await audit(["as-of", "--batch-id", id, "--at", String(done.created_at - 1)])
    expect(before.code).toBe(1)
    expect(before.stderr).toContain(`no batch ${id} as of ${done.created_at - 1}`)

    const sound = await audit(["verify"])
    expect(sound.stdout).toContain("result    verified")
    expect(sound.code, sound.stdout + sound.stderr).toBe(0)

    await sluice.stop()
    // The model's lane: its windows hold the row events (one slot, so a window or more per row).
    const lane = (await stored(id)).filter((m) => m.subject.includes(".lane."))
    const completions = lane.filter((m) => JSON.parse(m.data.toString()).events.some((e: { type: string }) => e.type === "row_completed"))
    expect(completions.length).toBeGreaterThanOrEqual(4)
    const victim = completions[1]!
    const window = JSON.parse(victim.data.toString())
    const altered = {
      ...window,
      events: window.events.map((e: { type: string; cost_usd?: number }) => (e.type === "row_completed" ? { ...e, cost_usd: e.cost_usd! + 1 } : e)),
    }
    const alteredSeq = await alter(victim, Buffer.from(JSON.stringify(altered)))
    const removed = completions[completions.length - 2]!
    await remove(removed)
    const laneSubject = victim.subject.replaceAll(".", "\\.")

    const tampered = await audit(["verify"])
    expect(tampered.code).toBe(1)
    expect(tampered.stdout).toContain(`batch ${id}`)
    expect(tampered.stdout).toMatch(new RegExp(`seq ${alteredSeq} on ${laneSubject} was altered`))
    // The message after the removed one no longer follows the one before it.
    const after = lane[lane.indexOf(removed) + 1]!.seq
    expect(tampered.stdout).toMatch(new RegExp(`seq ${after} on ${laneSubject} does not follow seq`))
    // The rebuilt read model misses the removed completion, and has the altered cost (on NATS the forged
    // copy lies past the stopped service's position, so there the original's row is missing instead).
    expect(tampered.stdout).toMatch(log === "nats" ? /read model: result \d+: status live 'completed', rebuilt '(running|queued)'/ : /read model: batch: cost_usd live/)
    expect(tampered.stdout).toMatch(/read model: result \d+: status live 'completed', rebuilt '(running|queued)'/)
    // The altered cost is spending the live read model never counted (the model is unpriced).
    if (log === "embedded") expect(tampered.stdout).toMatch(/usage \S+ day \d+: in the rebuilt read model only/)
    expect(tampered.stdout).toContain("chain problem(s)")
  })
})
