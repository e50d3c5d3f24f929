import Database from "better-sqlite3"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simDirective } from "../../src/sim/Directives.js"
import { client } from "../support/client.js"
import { type Sluice, startSluice } from "../support/sluice.js"

const model = "glm-5.3-flash"

/** The request bodies as the embedded log stored them, read from its file. */
const storedBodies = (dataDir: string, batchId: string): Array<Record<string, unknown>> => {
  const db = new Database(join(dataDir, "log.sqlite"), { readonly: true })
  try {
    const rows = db
      .prepare("SELECT data FROM messages WHERE subject = ? ORDER BY seq")
      .all(`batch.${batchId}.row_bodies`) as Array<{ data: Buffer }>
    return rows.flatMap((r) => (JSON.parse(r.data.toString("utf8")) as { bodies: Array<Record<string, unknown>> }).bodies)
  } finally {
    db.close()
  }
}

describe("Responses-shaped rows are normalized at create and run as chat completions", () => {
  let sluice: Sluice
  beforeAll(async () => {
    sluice = await startSluice()
  })
  afterAll(async () => {
    await sluice?.stop()
    sluice?.cleanup()
  })

  it("stores chat form, and the upstream sees the mapped messages and max_tokens", async () => {
    const api = client(sluice.url)
    const requests = [
      { custom_id: "string-input", body: { model, input: "Name a prime number." } },
      {
        custom_id: "items-with-instructions",
        method: "POST",
        url: "/v1/chat/completions",
        body: {
          model,
          instructions: "Reply in one sentence.",
          input: [
            { role: "user", content: [{ type: "input_text", text: "first question" }] },
            { role: "assistant", content: [{ type: "output_text", text: "an answer" }] },
            { type: "message", role: "user", content: "Summarize this." },
          ],
        },
      },
      { custom_id: "capped", body: { model, input: `Write at length ${simDirective.tokens(50)}`, max_output_tokens: 3 } },
      { custom_id: "chat", body: { model, messages: [{ role: "user", content: "plain chat" }] } },
    ]
    const created = await api.call("POST", "/v1/batches", { requests })
    expect(created.status).toBe(200)
    const batch = await api.waitFinal(created.body.id)
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 4, completed: 4, failed: 0 })

    const stored = storedBodies(sluice.dataDir, created.body.id)
    expect(stored).toEqual([
      { model, messages: [{ role: "user", content: "Name a prime number." }] },
      {
        model,
        messages: [
          { role: "system", content: "Reply in one sentence." },
          { role: "user", content: [{ type: "text", text: "first question" }] },
          { role: "assistant", content: [{ type: "text", text: "an answer" }] },
          { role: "user", content: "Summarize this." },
        ],
      },
      { model, messages: [{ role: "user", content: `Write at length ${simDirective.tokens(50)}` }], max_tokens: 3 },
      { model, messages: [{ role: "user", content: "plain chat" }] },
    ])

    const results = await api.allResults(created.body.id)
    const answer = (i: number) => results[i].response.body
    expect(answer(0).choices[0].message.content).toContain("Name a prime number.")
    expect(answer(1).choices[0].message.content).toContain("Summarize this.")
    expect(answer(2).choices[0].finish_reason).toBe("length")
    expect(answer(2).usage.completion_tokens).toBe(3)
  })
})
