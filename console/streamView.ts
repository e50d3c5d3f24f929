import { call, type Page, type ResponseObject, type StreamDetail } from "./api.js"
import { waitingFact } from "./waiting.js"
import { bar, h, show, tokens, whenIso } from "./dom.js"
import { responsesLink } from "./responseList.js"
import { responseTable } from "./responseTable.js"

const ITEMS_PAGE = 20
/** Items may arrive and settle at any time while the stream is open, and nothing pushes them: it is read again this often. */
const REFRESH_MS = 2000

const settled = (s: StreamDetail) => s.completed_items + s.failed_items + s.cancelled_items

/** One stream: its counters and token totals, and its items newest first, read again while it may still change. */
export const streamView = async (root: HTMLElement, key: string, streamId: string, cursors: ReadonlyArray<string>, signal: AbortSignal) => {
  const params = new URLSearchParams({ limit: String(ITEMS_PAGE), stream_id: streamId })
  const after = cursors[cursors.length - 1]
  if (after !== undefined) params.set("after", after)
  const read = () =>
    Promise.all([
      call<StreamDetail>(key, "GET", `/v1/streams/${streamId}`),
      call<Page<ResponseObject>>(key, "GET", `/v1/responses?${params}`),
    ])
  let [stream, items] = await read()
  const title = h("h1", {})
  const progress = h("div", { id: "progress" })
  const facts = h("div", { class: "facts" })
  const list = h("div", { id: "items" })
  const notice = h("div", { role: "alert" })
  const link = (to: ReadonlyArray<string>) => `#/streams/${streamId}${to.length === 0 ? "" : `?after=${to.join(",")}`}`

  const draw = () => {
    title.textContent = `${stream.name} (${stream.id})`
    progress.replaceChildren(bar(stream.completed_items, stream.failed_items, stream.total_items, true))
    const fact = (label: string, id: string, value: string | Node) => h("div", {}, label, h("b", { id }, value))
    facts.replaceChildren(
      fact("Status", "status", h("span", { class: `status ${stream.status}` }, stream.status)),
      fact("Window", "window", stream.window),
      fact("Priority", "priority", stream.priority),
      fact("Waiting on", "waiting", waitingFact(stream.waiting_on)),
      fact("Items", "total_items", String(stream.total_items)),
      fact("Pending", "pending_items", String(stream.pending_items)),
      fact("Running", "running_items", String(stream.running_items)),
      fact("Completed", "completed_items", String(stream.completed_items)),
      fact("Failed", "failed_items", String(stream.failed_items)),
      fact("Cancelled", "cancelled_items", String(stream.cancelled_items)),
      fact("Settled", "settled", `${settled(stream)} / ${stream.total_items}`),
      fact(
        "Tokens",
        "tokens",
        `${tokens(stream.total_tokens)} (${tokens(stream.total_prompt_tokens)} in; ${tokens(stream.total_completion_tokens)} out)`,
      ),
      fact("Created", "created", whenIso(stream.created_at)),
      fact("Last completion", "last_completion", whenIso(stream.last_completion_at) || "—"),
      ...(stream.cancelled_at === null ? [] : [fact("Cancelled at", "cancelled_at", whenIso(stream.cancelled_at))]),
      ...(stream.archived_at === null ? [] : [fact("Archived at", "archived_at", whenIso(stream.archived_at))]),
    )
    list.replaceChildren(
      items.data.length === 0 ? h("p", { class: "muted" }, "No items on this page.") : responseTable("stream-items", items.data),
      h(
        "div",
        { class: "row" },
        cursors.length === 0 ? null : h("a", { id: "items-newer", href: link(cursors.slice(0, -1)) }, "← Newer"),
        items.has_more && items.last_id !== null ? h("a", { id: "items-older", href: link([...cursors, items.last_id]) }, "Older →") : null,
      ),
    )
  }
  // A closed stream takes no new items; once none waits or runs, nothing of it changes again.
  const quiet = () => stream.status !== "open" && stream.pending_items === 0 && stream.running_items === 0

  draw()
  show(
    root,
    title,
    progress,
    facts,
    notice,
    h("h2", {}, "Items"),
    h("p", {}, h("a", { href: responsesLink([], streamId) }, "These items in the responses list")),
    list,
  )
  if (quiet()) return
  const timer = setInterval(() => {
    read().then(
      (next) => {
        if (signal.aborted) return
        ;[stream, items] = next
        notice.replaceChildren()
        draw()
        if (quiet()) clearInterval(timer)
      },
      (error: unknown) => {
        if (!signal.aborted) notice.replaceChildren(h("p", { class: "error" }, `Reading it again failed (still trying): ${String((error as Error).message)}`))
      },
    )
  }, REFRESH_MS)
  signal.addEventListener("abort", () => clearInterval(timer))
}
