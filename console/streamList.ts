import { ApiError, call, type StreamDetail, type StreamSummary } from "./api.js"
import { h, show, tokens, whenIso } from "./dom.js"

const PAGE = 20

/** Its counters, or null when it went between the list and this read (purged after its archive). */
const detailOf = (key: string, id: string) =>
  call<StreamDetail>(key, "GET", `/v1/streams/${id}`).catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 404) return null
    throw error
  })

const counters = ["total_items", "pending_items", "running_items", "completed_items", "failed_items", "cancelled_items"] as const

/**
 * The account's streams, newest first, 20 a page. The list carries no counters (sference's shape), so
 * each shown stream's are read from its own detail.
 */
export const streamList = async (root: HTMLElement, key: string, skip: number) => {
  const list = await call<{ items: ReadonlyArray<StreamSummary> }>(key, "GET", "/v1/streams")
  const shown = list.items.slice(skip, skip + PAGE)
  const details = await Promise.all(shown.map((s) => detailOf(key, s.id)))
  const link = (from: number) => `#/streams${from === 0 ? "" : `?skip=${from}`}`
  const rows = shown.map((s, i) => {
    const detail = details[i] ?? null
    return h(
      "tr",
      { class: "clickable", "data-stream": s.id, onclick: () => (location.hash = `#/streams/${s.id}`) },
      h("td", {}, h("a", { href: `#/streams/${s.id}` }, s.name), h("div", { class: "muted" }, s.id)),
      h("td", { class: "window" }, s.window),
      h("td", {}, h("span", { class: `status ${s.status}` }, s.status)),
      ...counters.map((c) => h("td", { class: c }, detail === null ? "—" : String(detail[c]))),
      h("td", { class: "tokens" }, detail === null ? "—" : tokens(detail.total_tokens)),
      h("td", {}, whenIso(s.created_at)),
    )
  })
  show(
    root,
    h("h1", {}, "Streams"),
    shown.length === 0
      ? h("p", { class: "muted" }, "No streams yet: create one with the API, the CLI or the SDK.")
      : h(
          "table",
          { id: "streams" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Stream", "Window", "Status", "Items", "Pending", "Running", "Completed", "Failed", "Cancelled", "Tokens", "Created"].map((t) =>
                h("th", {}, t),
              ),
            ),
          ),
          h("tbody", {}, rows),
        ),
    h(
      "div",
      { class: "row" },
      skip === 0 ? null : h("a", { href: link(Math.max(0, skip - PAGE)) }, "← Newer"),
      skip + PAGE < list.items.length ? h("a", { href: link(skip + PAGE) }, "Older →") : null,
    ),
  )
}
