import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client } from "../support/client.js"
import { startGatedUpstream } from "../support/gatedUpstream.js"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"
import { type NatsServer, startNatsServer } from "../support/natsServer.js"
import { waitFor } from "../support/waitFor.js"

/*
 * What the reads show of queued responses, as the model-based scheduling test found them wanting: a
 * stream counts each item by the status the item reads, and a flex Response, which only its caller's
 * answer reads, is never listed. The upstream is the test's own (test/support/gatedUpstream.ts): it holds
 * requests whose text starts with "hold" until the test lets them go, on a model with one batch slot.
 */

const MODEL = "gated"

describe.each([
  { log: "the embedded log", nats: false },
  { log: "NATS JetStream", nats: true },
] as const)("reads of queued responses, on $log", ({ nats: onNats }) => {
  let nats: NatsServer | undefined
  let upstream: Awaited<ReturnType<typeof startGatedUpstream>>
  let sluice: InProcessSluice
  const http = client(() => sluice.url)
  const api = http.call

  beforeAll(async () => {
    if (onNats) nats = await startNatsServer()
    upstream = await startGatedUpstream()
    sluice = await startInProcessSluice({
      ...(nats === undefined ? {} : { natsUrl: nats.url }),
      models: [{ id: MODEL, upstream_url: upstream.url, upstream_model: "gated-upstream", batch_concurrency: 1, timeout_ms: 3_600_000 }],
    })
  })
  afterAll(async () => {
    await sluice?.stop()
    await upstream?.close()
    await nats?.stop()
  })

  const held = (text: string) => waitFor(`the upstream holds '${text}'`, () => upstream.isHeld(text))
  const settled = async (id: string) => {
    let last: any
    await waitFor(`response ${id} is final`, async () => {
      last = (await api("GET", `/v1/responses/${id}`)).body
      return last.status !== "in_progress"
    })
    return last
  }
  const listedIds = async () => ((await api("GET", "/v1/responses?limit=100")).body.data as Array<{ id: string }>).map((r) => r.id)

  it("an item cancelled while its call runs reads cancelled with its answer, and its stream counts it cancelled, not completed", async () => {
    const stream = (await api("POST", "/v1/streams", { name: "counted" })).body
    const item = (text: string) => api("POST", "/v1/responses", { model: MODEL, input: text, metadata: { stream_id: stream.id } })
    const running = (await item("hold counted-running")).body
    await held("hold counted-running")
    const done = (await item("counted-done")).body

    expect((await api("POST", `/v1/responses/${running.id}/cancel`)).body.status).toBe("in_progress")
    upstream.release("hold counted-running")
    const cancelled = await settled(running.id)
    expect(cancelled.status).toBe("cancelled")
    expect(cancelled.output[0].content[0].text).toBe("echo: hold counted-running")
    expect(await settled(done.id)).toMatchObject({ status: "completed" })

    const detail = (await api("GET", `/v1/streams/${stream.id}`)).body
    expect(detail).toMatchObject({ total_items: 2, completed_items: 1, cancelled_items: 1, failed_items: 0, pending_items: 0, running_items: 0, completion_ratio: 1 })
    // The cancelled item's call was answered all the same: its tokens count.
    expect(detail).toMatchObject({ total_prompt_tokens: 10, total_completion_tokens: 6, total_tokens: 16 })
  })

  it("a flex Response is never listed, neither while it waits for a slot nor once answered; a background one is", async () => {
    const earlier = await listedIds()
    const blocker = (await api("POST", "/v1/responses", { model: MODEL, input: "hold flex-blocker", background: true })).body
    await held("hold flex-blocker")
    const flex = api("POST", "/v1/responses", { model: MODEL, input: "flex waits", service_tier: "flex" })
    await waitFor("the flex Response to be queued", async () => {
      const states = await http.admin("GET", "/admin/v1/models")
      return states.body.data.find((m: { id: string }) => m.id === MODEL)?.queued === 1
    })
    expect(await listedIds()).toEqual([blocker.id, ...earlier])

    upstream.release("hold flex-blocker")
    const answered = await flex
    expect(answered.body).toMatchObject({ status: "completed", service_tier: "flex" })
    expect(await listedIds()).toEqual([blocker.id, ...earlier])
    // Its answer names it: read by that id, it is what the answer said.
    expect((await api("GET", `/v1/responses/${answered.body.id}`)).body).toEqual(answered.body)
  })
})
