import { call, type ResponseObject } from "./api.js"
import { h, show, when } from "./dom.js"
import { tokenFacts } from "./usage.js"
import { waitingFact } from "./waiting.js"

/** An in_progress response is read again this often: a queued one has no events stream of its own. */
const REFRESH_MS = 1000

/** A function call's arguments as the model wrote them, laid out when they are JSON. */
const argumentsText = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    return text
  }
}

const outputOf = (response: ResponseObject) =>
  response.output.flatMap((item) => {
    switch (item.type) {
      case "message":
        return [h("h3", {}, "Text"), h("pre", { class: "output-text" }, item.content.map((part) => part.text).join(""))]
      case "function_call":
        return [
          h("h3", {}, "Function call ", h("code", { class: "function-name" }, item.name), ` (${item.call_id})`),
          h("pre", { class: "function-arguments" }, argumentsText(item.arguments)),
        ]
      case "reasoning":
        return [h("h3", {}, "Reasoning"), h("pre", { class: "reasoning" }, item.summary.map((part) => part.text).join("\n"))]
    }
  })

/** One queued response: where it stands, its output (text, function calls, reasoning) or error, its usage, and Cancel. */
export const responseView = async (root: HTMLElement, key: string, responseId: string, signal: AbortSignal) => {
  let response = await call<ResponseObject>(key, "GET", `/v1/responses/${responseId}`)
  const facts = h("div", { class: "facts" })
  const actions = h("div", { class: "row" })
  const notice = h("div", { role: "alert" })
  const stale = h("div", {})
  const output = h("div", { id: "output" })

  const draw = () => {
    const streamId = response.metadata["stream_id"]
    const customId = response.metadata["custom_id"]
    const fact = (label: string, id: string, value: string | Node) => h("div", {}, label, h("b", { id }, value))
    facts.replaceChildren(
      fact("Status", "status", h("span", { class: `status ${response.status}` }, response.status)),
      fact("Model", "model", response.model),
      fact("Background", "background", response.background ? "yes" : "no"),
      fact("Service tier", "service-tier", response.service_tier),
      ...(response.priority === undefined ? [] : [fact("Priority", "priority", response.priority)]),
      ...(response.waiting_on === undefined ? [] : [fact("Waiting on", "waiting", waitingFact(response.waiting_on))]),
      ...(streamId === undefined ? [] : [fact("Stream", "stream", h("a", { href: `#/streams/${streamId}` }, streamId))]),
      ...(customId === undefined ? [] : [fact("custom_id", "custom-id", customId)]),
      fact("Tokens", "tokens", response.usage === undefined ? "—" : tokenFacts(response.usage)),
      fact("Created", "created", when(response.created_at)),
      fact("Completed", "completed", when(response.completed_at) || "—"),
    )
    actions.replaceChildren(
      h("button", { id: "cancel", class: "danger", disabled: response.status !== "in_progress", onclick: cancel }, "Cancel response"),
    )
    output.replaceChildren(
      ...(response.error === null ? [] : [h("p", { class: "error", id: "response-error" }, `${response.error.code}: ${response.error.message}`)]),
      ...(response.incomplete_details === null
        ? []
        : [h("p", { class: "muted", id: "incomplete" }, `Incomplete: ${response.incomplete_details.reason}`)]),
      ...outputOf(response),
      response.output.length > 0 || response.error !== null
        ? ""
        : h("p", { class: "muted" }, response.status === "in_progress" ? "No output yet: it waits for a batch slot or runs." : "No output."),
      ...(Object.keys(response.metadata).length === 0
        ? []
        : [h("h3", {}, "Metadata"), h("pre", { id: "metadata" }, JSON.stringify(response.metadata, null, 2))]),
    )
  }
  const cancel = async () => {
    try {
      response = await call<ResponseObject>(key, "POST", `/v1/responses/${responseId}/cancel`)
      draw()
    } catch (error) {
      notice.replaceChildren(h("p", { class: "error" }, String((error as Error).message)))
    }
  }

  draw()
  show(root, h("h1", {}, responseId), facts, actions, notice, stale, h("h2", {}, "Output"), output)
  if (response.status !== "in_progress") return
  const timer = setInterval(() => {
    call<ResponseObject>(key, "GET", `/v1/responses/${responseId}`).then(
      (next) => {
        if (signal.aborted) return
        response = next
        stale.replaceChildren()
        draw()
        if (response.status !== "in_progress") clearInterval(timer)
      },
      (error: unknown) => {
        if (!signal.aborted) stale.replaceChildren(h("p", { class: "error" }, `Reading it again failed (still trying): ${String((error as Error).message)}`))
      },
    )
  }, REFRESH_MS)
  signal.addEventListener("abort", () => clearInterval(timer))
}
