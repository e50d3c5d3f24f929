import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import Database from "better-sqlite3"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { openReadOnly } from "../../src/projections/readModelFile.js"
import { readModelDigest } from "../../src/projections/rebuild.js"
import { type Simulator, startSimulator } from "../../src/sim/Simulator.js"
import { runCli } from "../support/cli.js"
import { client } from "../support/client.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { type ProcessRun, runToEnd } from "../support/processRun.js"
import { alterMessage, type LogPlace, type RawMessage, rawMessages } from "../support/rawLog.js"
import { waitFor } from "../support/waitFor.js"

/*
 * Responses and streams are aggregates of the log like batches: their messages carry CloudEvents headers
 * and hash-chain links, `sluice audit history` lists them, `sluice audit verify` checks their chains and
 * compares their read model rows, `npm run replay` compares their tables, and retention purges them,
 * a stream the retention period after its archive, leaving a tombstone. The actors run on a TestClock.
 */

const MODEL = "glm-5.3-flash"
const DAY = 86_400_000

describe.each([
  { log: "the embedded log", onNats: false },
  { log: "NATS JetStream", onNats: true },
] as const)("responses and streams in the log, on $log", ({ onNats }) => {
  let sim: Simulator
  // A server per test: the first one forges messages in its log.
  let nats: NatsServer | undefined
  let sluice: InProcessSluice | undefined
  let dataDir: string
  const place = (): LogPlace => ({ dataDir, natsUrl: nats?.url })
  const env = (): Record<string, string> => ({ SLUICE_DATA_DIR: dataDir, ...(nats === undefined ? {} : { NATS_URL: nats.url }) })
  const http = client(() => sluice!.url)
  const api = http.call

  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL] })
  })
  beforeEach(async () => {
    if (onNats) nats = await startNatsServer()
    dataDir = mkdtempSync(join(tmpdir(), "sluice-audit-rs-"))
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

  const start = async (startAt?: number) =>
    (sluice = await startInProcessSluice({
      models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }],
      dataDir,
      keepData: true,
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      ...(startAt === undefined ? {} : { startAt }),
    }))
  const stop = async () => {
    await sluice?.stop()
    sluice = undefined
  }
  const audit = (args: ReadonlyArray<string>) => runCli(["audit", ...args], env())
  const replay = (): Promise<ProcessRun> => {
    const vars: Record<string, string> = { ...(process.env as Record<string, string>), ...env() }
    if (nats === undefined) delete vars.NATS_URL
    return runToEnd(process.execPath, ["bin/replay.mjs"], { env: vars })
  }
  const respond = async (body: object) => {
    const created = await api("POST", "/v1/responses", { model: MODEL, ...body })
    expect(created.status, created.text).toBe(200)
    return created.body.id as string
  }
  const settled = (id: string) =>
    waitFor(`response ${id} is final`, async () => (await api("GET", `/v1/responses/${id}`)).body.status !== "in_progress")
  const newStream = async (name: string) => {
    const made = await api("POST", "/v1/streams", { name })
    expect(made.status, made.text).toBe(201)
    return made.body as { id: string }
  }
  const patch = async (id: string, body: object) => {
    const patched = await api("PATCH", `/v1/streams/${id}`, body)
    expect(patched.status, patched.text).toBe(200)
    return patched.body
  }
  const historyTypes = (run: ProcessRun) => run.stdout.trim().split("\n").map((l) => JSON.parse(l).type as string)
  const typeOf = (m: RawMessage) => JSON.parse(m.data.toString("utf8")).type as string
  const liveDigest = () => {
    const db = openReadOnly(join(dataDir, `read.${onNats ? "nats" : "embedded"}.sqlite`))
    try {
      return readModelDigest(db)
    } finally {
      db.close()
    }
  }

  it("their messages carry CloudEvents headers and chain links; history lists them; verify and replay hold, and fail on an altered message", async () => {
    await start()
    const background = await respond({ input: "audited in the background", background: true })
    const stream = await newStream("audited")
    const items = [await respond({ input: "item one", metadata: { stream_id: stream.id, custom_id: "c-1" } })]
    items.push(await respond({ input: "item two", metadata: { stream_id: stream.id, custom_id: "c-2" } }))
    for (const id of [background, ...items]) await settled(id)
    await patch(stream.id, { name: "audited 2" })
    await patch(stream.id, { name: "audited 3" })
    await patch(stream.id, { status: "cancelled" })
    await patch(stream.id, { status: "archived" })

    const responseMessages = await rawMessages(place(), `response.${background}.`)
    const streamMessages = await rawMessages(place(), `stream.${stream.id}.`)
    expect(responseMessages.map(typeOf)).toEqual(expect.arrayContaining(["row_bodies", "rows_added", "batch_created", "lane_window", "batch_completed"]))
    expect(streamMessages.map(typeOf)).toEqual(["stream_created", "stream_renamed", "stream_renamed", "stream_cancelled", "stream_archived"])
    for (const m of [...responseMessages, ...streamMessages]) {
      const [root, id] = m.subject.split(".")
      expect(m.headers, m.subject).toMatchObject({
        "ce-specversion": "1.0",
        "ce-source": "/sluice",
        "ce-type": `sluice.${root}.${typeOf(m)}`,
        "ce-subject": id,
        "ce-datacontenttype": "application/json",
      })
      expect(m.headers["Sluice-Sha256"], m.subject).toMatch(/^[0-9a-f]{64}$/)
    }
    expect(streamMessages[0]!.headers["ce-id"]).toBe(`${stream.id}:stream_created`)
    // Two renames on one subject: the second links to the first.
    const [first, second] = streamMessages.filter((m) => m.subject.endsWith(".stream_renamed"))
    expect(first!.headers["Sluice-Prev-Sha256"]).toBeUndefined()
    expect(second!.headers["Sluice-Prev-Sha256"]).toBe(first!.headers["Sluice-Sha256"])
    const itemCreated = (await rawMessages(place(), `response.${items[0]}.batch_created`))[0]!
    expect(JSON.parse(itemCreated.data.toString("utf8")).response).toMatchObject({ stream_id: stream.id, custom_id: "c-1", background: false })

    const responseHistory = await audit(["history", "--response-id", background, "--json"])
    expect(responseHistory.code, responseHistory.stderr).toBe(0)
    const responseTypes = historyTypes(responseHistory)
    expect(responseTypes).toEqual(expect.arrayContaining(["batch_created", "row_started", "row_completed"]))
    expect(responseTypes[responseTypes.length - 1]).toBe("batch_completed")
    expect(responseHistory.stdout).not.toContain("audited in the background")
    const streamHistory = await audit(["history", "--stream-id", stream.id, "--json"])
    expect(historyTypes(streamHistory)).toEqual(["stream_created", "stream_renamed", "stream_renamed", "stream_cancelled", "stream_archived"])
    const wrongId = await audit(["history", "--response-id", stream.id])
    expect(wrongId.code).toBe(2)
    expect(wrongId.stderr).toContain("--response-id takes a response's id")

    const sound = await audit(["verify"])
    expect(sound.stdout).toContain("result    verified")
    expect(sound.code, sound.stdout + sound.stderr).toBe(0)

    await stop()
    const equal = await replay()
    expect(equal.stdout).toMatch(/^result\s+equal/m)
    expect(equal.code, equal.stdout + equal.stderr).toBe(0)
    const digest = liveDigest()
    expect(digest.tables.responses.rows).toBe(3)
    expect(digest.tables.streams.rows).toBe(1)

    // A live read model whose stream differs from the log's: replay says which table, verify which stream and field.
    const live = new Database(join(dataDir, `read.${onNats ? "nats" : "embedded"}.sqlite`))
    live.prepare("UPDATE streams SET name = 'forged' WHERE id = ?").run(stream.id)
    const different = await replay()
    expect(different.stdout).toMatch(/^result\s+different in streams: live 1 rows, rebuilt 1/m)
    expect(different.code).toBe(1)
    const streamDiffers = await audit(["verify"])
    expect(streamDiffers.code).toBe(1)
    expect(streamDiffers.stdout).toContain(`stream ${stream.id}\n  read model: stream: name live 'forged', rebuilt 'audited 3'`)
    live.prepare("UPDATE streams SET name = 'audited 3' WHERE id = ?").run(stream.id)
    live.close()

    // The first rename forged (the second hides it from the read model: only its chain shows it), and the response's answer.
    const forgedRename = await alterMessage(place(), first!, Buffer.from(first!.data.toString("utf8").replace("audited 2", "forged name")))
    const completion = responseMessages.find((m) => m.subject.includes(".lane.") && m.data.toString("utf8").includes("row_completed"))!
    const forgedAnswer = await alterMessage(place(), completion, Buffer.from(completion.data.toString("utf8").replace("Simulated answer", "Forged answer")))
    const tampered = await audit(["verify"])
    expect(tampered.code).toBe(1)
    const lines = tampered.stdout.split("\n")
    /** The report's lines under an aggregate's heading. */
    const group = (aggregate: string) => {
      const from = lines.indexOf(aggregate) + 1
      const end = lines.findIndex((l, i) => i >= from && !l.startsWith("  "))
      return lines.slice(from, end === -1 ? undefined : end)
    }
    expect(lines).toContain(`stream ${stream.id}`)
    expect(group(`stream ${stream.id}`)).toContain(`  seq ${forgedRename} on ${first!.subject} was altered: its data does not match its chain link`)
    expect(lines).toContain(`response ${background}`)
    expect(group(`response ${background}`)).toContain(`  seq ${forgedAnswer} on ${completion.subject} was altered: its data does not match its chain link`)
    expect(group(`response ${background}`).some((l) => l.startsWith("  read model: result 0: "))).toBe(true)
    expect(tampered.stdout).toContain("chain problem(s)")
  })

  it("an archived stream is purged the retention period after its archive and leaves a tombstone; a stream never archived is kept; a response goes 7 days after it ended", async () => {
    await start()
    const background = await respond({ input: "kept for a week", background: true })
    const open = await newStream("open")
    const cancelled = await newStream("cancelled")
    await patch(cancelled.id, { status: "cancelled" })
    const archived = await newStream("archived")
    const item = await respond({ input: "an item", metadata: { stream_id: archived.id } })
    for (const id of [background, item]) await settled(id)
    const archivedAt = Date.parse((await patch(archived.id, { status: "archived" })).archived_at)
    const history = await rawMessages(place(), `stream.${archived.id}.`)
    expect(history.map(typeOf)).toEqual(["stream_created", "stream_archived"])

    await sluice!.adjust(7 * DAY - 60_000)
    expect((await api("GET", `/v1/streams/${archived.id}`)).status).toBe(200)
    expect((await api("GET", `/v1/responses/${background}`)).status).toBe(200)

    await sluice!.adjust(60_000)
    await waitFor("the archived stream is purged", async () => (await api("GET", `/v1/streams/${archived.id}`)).status === 404)
    const gone = await api("GET", `/v1/streams/${archived.id}`)
    expect(gone.body.error).toMatchObject({ code: "stream_deleted", type: "invalid_request_error" })
    expect(gone.body.error.message).toContain(`Stream '${archived.id}' was deleted at `)
    expect(gone.body.error.message).toContain(new Date(archivedAt).toISOString().replace(/\.\d{3}Z$/, "Z"))
    expect(gone.body.error.message).not.toContain("\n")
    expect((await api("PATCH", `/v1/streams/${archived.id}`, { name: "again" })).body.error.code).toBe("stream_deleted")
    const listed = (await api("GET", "/v1/streams")).body.items.map((s: { id: string }) => s.id)
    expect(listed).not.toContain(archived.id)
    expect(listed).toEqual(expect.arrayContaining([open.id, cancelled.id]))
    expect((await api("GET", `/v1/streams/${open.id}`)).body.status).toBe("open")
    expect((await api("GET", `/v1/streams/${cancelled.id}`)).body.status).toBe("cancelled")
    const otherKey = await (async () => {
      expect((await http.admin("POST", "/admin/v1/accounts", { id: "acct_other", tier: "internal" })).status).toBe(200)
      return (await http.admin("POST", "/admin/v1/accounts/acct_other/keys", {})).body.key as string
    })()
    expect((await client(() => sluice!.url, otherKey).call("GET", `/v1/streams/${archived.id}`)).body.error.code).toBe("stream_not_found")
    await waitFor("the response is purged", async () => (await api("GET", `/v1/responses/${background}`)).status === 404)

    // The tombstone is the one message left, and keeps each purged subject's last link.
    const left = await rawMessages(place(), `stream.${archived.id}.`)
    expect(left.map((m) => m.subject)).toEqual([`stream.${archived.id}.stream_purged`])
    const tombstone = JSON.parse(left[0]!.data.toString("utf8"))
    expect(tombstone).toMatchObject({ type: "stream_purged", stream_id: archived.id, account_id: "bootstrap", archived_at: archivedAt })
    expect(tombstone.chain_heads).toEqual(Object.fromEntries(history.map((m) => [m.subject, m.headers["Sluice-Sha256"]])))
    expect(left[0]!.headers["Sluice-Sha256"]).toMatch(/^[0-9a-f]{64}$/)
    expect(historyTypes(await audit(["history", "--stream-id", archived.id, "--json"]))).toEqual(["stream_purged"])
    expect(historyTypes(await audit(["history", "--response-id", background, "--json"]))).toEqual(["batch_purged"])
    const verified = await audit(["verify"])
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)

    // A purge that fell due while the service was stopped runs when it starts again.
    const late = await newStream("late")
    await patch(late.id, { status: "archived" })
    const stoppedAt = await sluice!.now()
    await stop()
    await start(stoppedAt + 8 * DAY)
    await waitFor("the late stream is purged at start", async () => (await api("GET", `/v1/streams/${late.id}`)).status === 404)
    expect((await api("GET", `/v1/streams/${late.id}`)).body.error.code).toBe("stream_deleted")
    expect((await api("GET", `/v1/streams/${open.id}`)).body.status).toBe("open")
    expect((await api("GET", `/v1/streams/${cancelled.id}`)).body.status).toBe("cancelled")

    await stop()
    const equal = await replay()
    expect(equal.stdout).toMatch(/^result\s+equal/m)
    expect(equal.code, equal.stdout + equal.stderr).toBe(0)
    expect(liveDigest().tables.stream_tombstones.rows).toBe(2)
  })
})

describe("a stream renamed from two instances at once, on NATS JetStream", () => {
  let sim: Simulator
  let nats: NatsServer
  const instances: Array<InProcessSluice> = []
  const dirs: Array<string> = []
  beforeAll(async () => {
    sim = await startSimulator({ models: [MODEL] })
    nats = await startNatsServer()
  })
  afterAll(async () => {
    for (const sluice of instances) await sluice.stop()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    await nats?.stop()
    await sim?.close()
  })

  it("keeps one chain on the rename subject: each rename goes after the last one stored, whichever instance wrote it", async () => {
    for (let i = 0; i < 2; i++) {
      const dataDir = mkdtempSync(join(tmpdir(), "sluice-audit-race-"))
      dirs.push(dataDir)
      instances.push(await startInProcessSluice({ models: [{ id: MODEL, upstream_url: sim.url, batch_concurrency: 2 }], dataDir, keepData: true, natsUrl: nats.url }))
    }
    const [a, b] = instances.map((s) => client(s.url).call)
    const made = await a!("POST", "/v1/streams", { name: "raced" })
    expect(made.status, made.text).toBe(201)
    const id = made.body.id as string
    const names = Array.from({ length: 12 }, (_, i) => `n${i}`)
    const answers = await Promise.all(names.map((name, i) => (i % 2 === 0 ? a! : b!)("PATCH", `/v1/streams/${id}`, { name })))
    expect(answers.map((r) => r.status)).toEqual(names.map(() => 200))

    const renames = await rawMessages({ dataDir: dirs[0]!, natsUrl: nats.url }, `stream.${id}.stream_renamed`)
    expect(renames.map((m) => JSON.parse(m.data.toString("utf8")).name).sort()).toEqual([...names].sort())
    renames.forEach((m, i) => expect(m.headers["Sluice-Prev-Sha256"], `rename ${i}`).toBe(i === 0 ? undefined : renames[i - 1]!.headers["Sluice-Sha256"]))
    const verified = await runCli(["audit", "verify"], { SLUICE_DATA_DIR: dirs[0]!, NATS_URL: nats.url })
    expect(verified.code, verified.stdout + verified.stderr).toBe(0)
  })
})
