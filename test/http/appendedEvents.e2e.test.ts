import { describe, expect, it } from "vitest"
import { chatRow } from "../support/client.js"
import { scrape } from "../support/prometheus.js"
import { rawMessages } from "../support/rawLog.js"
import { waitFor } from "../support/waitFor.js"
import { withSluice } from "../support/withSluice.js"

const MODEL = "glm-5.3-flash"

/*
 * The log's two counters against what the log holds, on both logs: a 20-row batch's row events travel
 * in its model's lane windows, several to a message, so the events counter moves by the events the
 * batch's messages hold and the messages counter by the messages.
 */
describe.each(["embedded", "nats"] as const)("the appended counters on the %s log", (log) => {
  const f = withSluice({
    log,
    inProcess: true,
    simulator: { models: [MODEL], latencyMs: 2 },
    models: (url) => [{ id: MODEL, upstream_url: url, batch_concurrency: 4 }],
  })

  it("a 20-row batch moves the events counter by the events its messages hold, and the messages counter by its messages", async () => {
    const before = await scrape(f.sluice.url)
    const created = await f.api().call("POST", "/v1/batches", { requests: Array.from({ length: 20 }, (_, i) => chatRow(`r${i}`, `row ${i}`, MODEL)) })
    expect(created.status, created.text).toBe(200)
    const batch = await f.api().waitFinal(created.body.id)
    expect(batch.request_counts).toEqual({ total: 20, completed: 20, failed: 0 })
    await waitFor("the batch's last append to be counted", async () => (await scrape(f.sluice.url)).value("sluice_batches", { status: "completed" }) >= 1)
    const after = await scrape(f.sluice.url)

    const stored = await rawMessages({ dataDir: f.sluice.dataDir, natsUrl: f.natsUrl }, `batch.${created.body.id}.`)
    // Small enough that no message is stored in parts: each stored message is one the service appended.
    expect(stored.filter((m) => m.headers["Sluice-Chunk"] !== undefined)).toEqual([])
    const events = stored.flatMap((m) =>
      m.subject.includes(".lane.") ? (JSON.parse(m.data.toString()) as { events: Array<{ type: string }> }).events.map((e) => e.type) : [m.subject.split(".")[2]!],
    )
    expect(events.filter((t) => t === "row_started")).toHaveLength(20)
    expect(events.filter((t) => t === "row_completed")).toHaveLength(20)
    // Windows hold several row events, so the two counters differ; how many a window holds depends on the
    // machine's pace (CI once stored 47 events in 27 messages), so only that they differ is asked.
    expect(events.length).toBeGreaterThan(stored.length)
    const delta = (name: string) => after.value(name) - before.value(name)
    expect(delta("sluice_eventlog_events_appended_total")).toBe(events.length)
    expect(delta("sluice_eventlog_messages_appended_total")).toBe(stored.length)
  })
})
