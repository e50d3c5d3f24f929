import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { filePartSubject, fileSubject } from "../../src/domain/file/events.js"
import { linkHash } from "../../src/eventlog/eventHeaders.js"
import { openReadOnly } from "../../src/projections/readModelFile.js"
import { readModelDigest } from "../../src/projections/rebuild.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { runCli } from "../support/cli.js"
import { client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { type ProcessRun, runToEnd } from "../support/processRun.js"
import { alterMessage, type LogPlace, rawMessages } from "../support/rawLog.js"
import { BOOTSTRAP_KEY } from "../support/sluice.js"

/*
 * Uploaded files are aggregates of the log like batches: their raw parts and their events carry
 * CloudEvents headers and hash-chain links, `sluice audit history --file-id` lists them, `sluice audit
 * verify` checks their chains (a part's bytes included) and compares their read model rows, `npm run
 * replay` compares the files and file tombstones tables, and a purged file's tombstone keeps the last
 * link of each subject it had.
 */

const MODEL = "glm-5.3-flash"
const PART_BYTES = 256 * 1024

const line = (i: number) =>
  `${JSON.stringify({ custom_id: `row-${i}`, method: "POST", url: "/v1/chat/completions", body: { model: MODEL, messages: [{ role: "user", content: `question ${i} ${"x".repeat(2000)}` }] } })}\n`
/** About 600 KB: three parts. */
const content = Array.from({ length: 300 }, (_, i) => line(i)).join("")

describe.each([
  { log: "the embedded log", onNats: false },
  { log: "NATS JetStream", onNats: true },
] as const)("uploaded files in the log, on $log", ({ onNats }) => {
  let sim: Simulator
  let nats: NatsServer | undefined
  let sluice: InProcessSluice | undefined
  let dataDir: string
  const place = (): LogPlace => ({ dataDir, natsUrl: nats?.url })
  const env = (): Record<string, string> => ({ SLUICE_DATA_DIR: dataDir, ...(nats === undefined ? {} : { NATS_URL: nats.url }) })
  const api = client(() => sluice!.url).call

  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL] })
  })
  beforeEach(async () => {
    if (onNats) nats = await startNatsServer()
    dataDir = mkdtempSync(join(tmpdir(), "sluice-audit-files-"))
  })
  afterEach(async () => {
    await sluice?.stop()
    sluice = undefined
    await nats?.stop()
    nats = undefined
    rmSync(dataDir, { recursive: true, force: true })
  })
  afterAll(async () => {
    await sim?.close()
  })

  const start = async () =>
    (sluice = await startInProcessSluice({
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }],
      dataDir,
      keepData: true,
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
    }))
  const audit = (args: ReadonlyArray<string>) => runCli(["audit", ...args], env())
  const replay = (): Promise<ProcessRun> => {
    const vars: Record<string, string> = { ...(process.env as Record<string, string>), ...env() }
    if (nats === undefined) delete vars.NATS_URL
    return runToEnd(process.execPath, ["bin/replay.mjs"], { env: vars })
  }
  const upload = async (name: string, text: string) => {
    const form = new FormData()
    form.append("purpose", "batch")
    form.append("file", new Blob([text]), name)
    const answer = await fetch(`${sluice!.url}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` }, body: form })
    const body = (await answer.json()) as { id: string }
    expect(answer.status, JSON.stringify(body)).toBe(200)
    return body.id
  }
  const history = async (fileId: string) => {
    const run = await audit(["history", "--file-id", fileId, "--json"])
    expect(run.code, run.stderr).toBe(0)
    return run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { seq: number; subject: string; type: string; event: Record<string, unknown> })
  }
  const readModelPath = () => join(dataDir, `read.${onNats ? "nats" : "embedded"}.sqlite`)

  it("parts and events carry CloudEvents headers and chain links; history lists them; a purge keeps each subject's last link; verify and replay hold, and fail on an altered part or row", async () => {
    await start()
    const kept = await upload("kept.jsonl", content)
    const dropped = await upload("dropped.jsonl", content.slice(0, 2 * line(0).length))

    const parts = await rawMessages(place(), filePartSubject(kept))
    expect(parts.length).toBe(Math.ceil(Buffer.byteLength(content) / PART_BYTES))
    expect(Buffer.concat(parts.map((p) => p.data)).toString("utf8")).toBe(content)
    parts.forEach((part, n) => {
      expect(part.headers, `part ${n}`).toMatchObject({
        "ce-specversion": "1.0",
        "ce-source": "/sluice",
        "ce-type": "sluice.file.part",
        "ce-subject": kept,
        "ce-datacontenttype": "application/octet-stream",
        "ce-id": `${kept}:part:${n}`,
      })
      // One chain over the parts, in order: each links to the part before it.
      const prev = n === 0 ? "" : parts[n - 1]!.headers["Sluice-Sha256"]!
      expect(part.headers["Sluice-Prev-Sha256"]).toBe(n === 0 ? undefined : prev)
      expect(part.headers["Sluice-Sha256"]).toBe(linkHash(prev, part.subject, part.data))
    })
    const [created] = await rawMessages(place(), fileSubject(kept, "file_created"))
    expect(created!.headers).toMatchObject({ "ce-type": "sluice.file.file_created", "ce-subject": kept, "ce-datacontenttype": "application/json", "ce-id": `${kept}:file_created` })
    expect(created!.headers["Sluice-Sha256"]).toBe(linkHash("", created!.subject, created!.data))
    expect(JSON.parse(created!.data.toString("utf8")).content).toEqual({ first_seq: parts[0]!.seq, last_seq: parts[parts.length - 1]!.seq, parts: parts.length })

    // Deleted: purged to its tombstone, which keeps the last link of each subject the file had.
    const droppedHistory = await rawMessages(place(), `file.${dropped}.`)
    expect((await api("DELETE", `/v1/files/${dropped}`)).status).toBe(200)
    const left = await rawMessages(place(), `file.${dropped}.`)
    expect(left.map((m) => m.subject)).toEqual([fileSubject(dropped, "file_purged")])
    const tombstone = JSON.parse(left[0]!.data.toString("utf8"))
    expect(tombstone).toMatchObject({ type: "file_purged", file_id: dropped, account_id: "bootstrap", reason: "deleted" })
    const deletedLink = tombstone.chain_heads[fileSubject(dropped, "file_deleted")]
    expect(deletedLink).toMatch(/^[0-9a-f]{64}$/)
    expect(tombstone.chain_heads).toEqual({
      ...Object.fromEntries(droppedHistory.map((m) => [m.subject, m.headers["Sluice-Sha256"]])),
      [fileSubject(dropped, "file_deleted")]: deletedLink,
    })
    expect(left[0]!.headers["Sluice-Sha256"]).toBe(linkHash("", left[0]!.subject, left[0]!.data))

    // History: the parts numbered, then file_created; a purged file's tombstone alone.
    const keptHistory = await history(kept)
    expect(keptHistory.map((e) => e.type)).toEqual([...parts.map(() => "part"), "file_created"])
    expect(keptHistory.slice(0, parts.length).map((e) => [e.seq, e.event])).toEqual(parts.map((p, n) => [p.seq, { part: n }]))
    expect(keptHistory[parts.length]!.event).toMatchObject({ type: "file_created", file_id: kept, filename: "kept.jsonl", lines: 300 })
    expect(JSON.stringify(keptHistory)).not.toContain("question 1")
    expect((await history(dropped)).map((e) => e.type)).toEqual(["file_purged"])
    const plain = await audit(["history", "--file-id", kept])
    expect(plain.stdout.trim().split("\n")[parts.length]).toMatch(/file_created\s+\{"key_id":/)
    const view = await audit(["history", "--file-id", "file-out-0123abcd"])
    expect(view.code).toBe(2)
    expect(view.stderr).toContain("is batch batch_0123abcd's output file, read from its results with no events of its own: see --batch-id batch_0123abcd")
    expect((await audit(["history", "--file-id", "batch_0123abcd"])).stderr).toContain("--file-id takes an uploaded file's id (file-…)")

    const sound = await audit(["verify"])
    expect(sound.stdout).toContain("result    verified")
    expect(sound.code, sound.stdout + sound.stderr).toBe(0)

    await sluice!.stop()
    sluice = undefined
    const equal = await replay()
    expect(equal.stdout).toMatch(/^result\s+equal/m)
    expect(equal.code, equal.stdout + equal.stderr).toBe(0)
    const db = openReadOnly(readModelPath())
    const digest = readModelDigest(db)
    db.close()
    expect(digest.tables.files.rows).toBe(1)
    expect(digest.tables.file_tombstones.rows).toBe(1)

    // A live read model whose file differs from the log's: replay names the table, verify the file and the field.
    const live = new Database(readModelPath())
    live.prepare("UPDATE files SET filename = 'forged.jsonl' WHERE id = ?").run(kept)
    live.prepare("DELETE FROM file_tombstones WHERE id = ?").run(dropped)
    const different = await replay()
    expect(different.stdout).toMatch(/^result\s+different in files: live 1 rows, rebuilt 1; file_tombstones: live 0 rows, rebuilt 1 /m)
    expect(different.code).toBe(1)
    const rowsDiffer = await audit(["verify"])
    expect(rowsDiffer.code).toBe(1)
    expect(rowsDiffer.stdout).toContain(`file ${kept}\n  read model: file: filename live 'forged.jsonl', rebuilt 'kept.jsonl'`)
    expect(rowsDiffer.stdout).toContain(`file ${dropped}\n  read model: tombstone: in the rebuilt read model only`)
    live.prepare("UPDATE files SET filename = 'kept.jsonl' WHERE id = ?").run(kept)
    live.close()
    const repaired = await replay()
    expect(repaired.stdout).toMatch(/^result\s+different in file_tombstones/m)

    // A part's bytes forged: nothing in the read model shows it (a part is no event), only its chain.
    const forged = await alterMessage(place(), parts[1]!, Buffer.from(parts[1]!.data.toString("utf8").replace("question", "forgery!")))
    const tampered = await audit(["verify"])
    expect(tampered.code).toBe(1)
    const lines = tampered.stdout.split("\n")
    const from = lines.indexOf(`file ${kept}`) + 1
    expect(from).toBeGreaterThan(0)
    const end = lines.findIndex((l, i) => i >= from && !l.startsWith("  "))
    const found = lines.slice(from, end === -1 ? undefined : end)
    expect(found).toContain(`  seq ${forged} on ${filePartSubject(kept)} was altered: its data does not match its chain link`)
    expect(found.some((l) => l.includes("read model"))).toBe(false)
    expect(tampered.stdout).toContain("chain problem(s)")
  })
})
