import { call, type Page, type ResponseObject, type StreamSummary } from "./api.js"
import { h, show } from "./dom.js"
import { responseTable } from "./responseTable.js"

const PAGE = 20

/** The address of a page of the list: the cursors before it and the stream it is filtered by, so Back and a reload keep both. */
export const responsesLink = (cursors: ReadonlyArray<string>, streamId: string | null) => {
  const params = new URLSearchParams()
  if (streamId !== null) params.set("stream_id", streamId)
  if (cursors.length > 0) params.set("after", cursors.join(","))
  const query = params.toString()
  return `#/responses${query === "" ? "" : `?${query}`}`
}

/**
 * The account's queued responses (background ones and streams' items), newest first, a page at a time,
 * all of them or one stream's. `cursors` are the last response ids of the pages before this one.
 */
export const responseList = async (root: HTMLElement, key: string, cursors: ReadonlyArray<string>, streamId: string | null) => {
  const params = new URLSearchParams({ limit: String(PAGE) })
  const after = cursors[cursors.length - 1]
  if (after !== undefined) params.set("after", after)
  if (streamId !== null) params.set("stream_id", streamId)
  const [page, streams] = await Promise.all([
    call<Page<ResponseObject>>(key, "GET", `/v1/responses?${params}`),
    call<{ items: ReadonlyArray<StreamSummary> }>(key, "GET", "/v1/streams"),
  ])
  const filter = h(
    "select",
    { id: "filter-stream", onchange: (event: Event) => (location.hash = responsesLink([], (event.target as HTMLSelectElement).value || null)) },
    h("option", { value: "" }, "all responses"),
    ...streams.items.map((s) => h("option", { value: s.id, selected: s.id === streamId }, `stream ${s.name} (${s.id})`)),
    streamId === null || streams.items.some((s) => s.id === streamId) ? null : h("option", { value: streamId, selected: true }, `stream ${streamId}`),
  )
  show(
    root,
    h("h1", {}, "Responses"),
    h("div", { class: "row" }, filter),
    page.data.length === 0
      ? h("p", { class: "muted" }, "No queued responses: create one with background: true, or in a stream.")
      : responseTable("responses", page.data),
    h(
      "div",
      { class: "row" },
      cursors.length === 0 ? null : h("a", { id: "responses-newer", href: responsesLink(cursors.slice(0, -1), streamId) }, "← Newer"),
      page.has_more && page.last_id !== null
        ? h("a", { id: "responses-older", href: responsesLink([...cursors, page.last_id], streamId) }, "Older →")
        : null,
    ),
  )
}
