import { expect } from "vitest"
import type { Answer } from "../client.js"
import { outputText } from "./responseChecks.js"
import { type Flex, type Kind, type World, answerTo, mayBeAway, newRequest, queuedAway } from "./world.js"

const parsed = (text: string): any => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Sends a flex request and does not wait for it: it waits for a batch slot while the next commands run,
 * and a later check looks at how it ended.
 */
export const sendFlex = (w: World, account: number, kind: Kind, endpoint: Flex["endpoint"], waitS: number, via: number) => {
  const i = via % w.sluices.length
  const sent = newRequest(w, kind)
  const model = `m-${account}`
  const body =
    endpoint === "chat"
      ? { model, messages: [{ role: "user", content: sent.text }], service_tier: "flex", max_queue_wait_s: waitS }
      : { model, input: sent.text, service_tier: "flex", max_queue_wait_s: waitS, metadata: { tag: sent.tag } }
  const flex: Flex = {
    account,
    via: i,
    endpoint,
    sent,
    generation: w.generations[i]!,
    sentWhileAway: mayBeAway(w, i),
    partitionsBefore: w.partitions[i]!,
    abort: new AbortController(),
    checked: false,
  }
  w.flexes.push(flex)
  const ended = (end: NonNullable<Flex["end"]>) => {
    flex.end = end
    // A flex request whose answer was lost with its instance stays queued in the log, and an instance
    // started again runs it: every disruption after the loss may run it once more, as for a batch row.
    flex.until = end._tag === "Lost" ? undefined : w.disruptions
  }
  void fetch(`${w.sluices[i]!.url}${endpoint === "chat" ? "/v1/chat/completions" : "/v1/responses"}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${w.keys[account]!.key}` },
    body: JSON.stringify(body),
    signal: flex.abort.signal,
  }).then(
    async (response) => {
      const text = await response.text()
      ended({ _tag: "Answered", answer: { status: response.status, body: parsed(text), text, headers: response.headers } })
    },
    (error) => ended(flex.abort.signal.aborted ? { _tag: "Abandoned" } : { _tag: "Lost", error: String(error?.cause ?? error) }),
  )
}

/** A flex request's answer: the model's, marked flex, from a request the upstream saw; or 408 having run nothing. */
const checkAnswer = (w: World, flex: Flex, answer: Answer) => {
  const what = `flex ${flex.endpoint} '${flex.sent.text}' via #${flex.via}: ${answer.status} ${answer.text}`
  const away = flex.sentWhileAway || w.partitions[flex.via]! > flex.partitionsBefore
  if (away && queuedAway(answer)) return
  const calls = w.upstreams[flex.account]!.calls(flex.sent.text)
  const disruptions = flex.until! - flex.sent.since
  if (answer.status === 408) {
    expect(answer.body?.error?.code, what).toBe("flex_queue_timeout")
    expect(Number(answer.headers.get("retry-after")), what).toBeGreaterThanOrEqual(1)
    // Not started in time: it ran nothing, unless a transient failure's retry came too late to start.
    expect(calls, what).toBeLessThanOrEqual((flex.sent.kind === "transient" ? 2 : 0) + disruptions)
    return
  }
  if (answer.status === 401 || answer.status === 429) return
  // Its instance stopped while it waited for a slot (its first, or one for a retry): taken out of the queue
  // and answered 503 to be sent again, never run after (b97b1f1). Any other 503 is the upstream's own, below,
  // even from an instance that stopped meanwhile (a transient row whose retry came after its wait).
  if (answer.status === 503 && /shutting down: the flex request was taken out of the queue before it ran/.test(answer.body?.error?.message)) {
    expect(answer.body.error.code, what).toBe("service_unavailable")
    expect(w.generations[flex.via]!, what).toBeGreaterThan(flex.generation)
    expect(Number(answer.headers.get("retry-after")), what).toBeGreaterThanOrEqual(1)
    return
  }
  if (flex.endpoint === "chat") {
    if (answer.status === 200) {
      expect(answer.body.service_tier, what).toBe("flex")
      expect(answer.body.choices[0].message.content, what).toBe(answerTo(flex.sent))
      expect(calls, what).toBeGreaterThanOrEqual(1)
      return
    }
    // The upstream refused it for good, or its run ended without an answer: the key revoked meanwhile (502),
    // or a transient failure's retry came after its start-by time (the upstream's own 503).
    expect([400, 502, 503], what).toContain(answer.status)
    if (answer.status === 400) expect([flex.sent.kind, calls > 0], what).toEqual(["permanent", true])
    if (answer.status === 503) expect([flex.sent.kind, calls > 0], what).toEqual(["transient", true])
    return
  }
  expect(answer.status, what).toBe(200)
  expect(answer.body).toMatchObject({ object: "response", service_tier: "flex", background: false })
  expect(["completed", "failed", "cancelled"], what).toContain(answer.body.status)
  if (answer.body.status === "completed") {
    expect(outputText(answer.body), what).toBe(answerTo(flex.sent))
    expect(calls, what).toBeGreaterThanOrEqual(1)
  }
  w.responses.push({ id: answer.body.id, account: flex.account, sent: flex.sent, stream: null, flex: true, final: answer.body, priority: undefined, startBy: undefined })
}

/** Each flex request that ended since the last check: how it ended. A lost answer is allowed only from an instance stopped meanwhile. */
export const checkFlexes = (w: World) => {
  for (const flex of w.flexes) {
    if (flex.end === undefined || flex.checked) continue
    flex.checked = true
    if (flex.end._tag === "Lost") {
      expect(w.generations[flex.via]!, `flex '${flex.sent.text}' via #${flex.via} lost its answer: ${flex.end.error}`).toBeGreaterThan(flex.generation)
    } else if (flex.end._tag === "Answered") {
      checkAnswer(w, flex, flex.end.answer)
    }
  }
}
