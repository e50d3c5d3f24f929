import { type Batch, call, type Page } from "./api.js"
import { bar, h, show, tokens, usd, when } from "./dom.js"

const PAGE = 20

/**
 * The account's batches, newest first, a page at a time. `cursors` are the last batch ids of the pages
 * before this one (kept in the address, so Back and a reload keep the place).
 */
export const batchList = async (root: HTMLElement, key: string, cursors: ReadonlyArray<string>) => {
  const after = cursors[cursors.length - 1]
  const query = `limit=${PAGE}${after === undefined ? "" : `&after=${encodeURIComponent(after)}`}`
  const page = await call<Page<Batch>>(key, "GET", `/v1/batches?${query}`)
  const link = (to: ReadonlyArray<string>) => `#/batches${to.length === 0 ? "" : `?after=${to.join(",")}`}`
  const rows = page.data.map((b) => {
    const { total, completed, failed } = b.request_counts
    return h(
      "tr",
      { class: "clickable", "data-batch": b.id, onclick: () => (location.hash = `#/batches/${b.id}`) },
      h("td", {}, h("a", { href: `#/batches/${b.id}` }, b.id)),
      h(
        "td",
        {},
        h("span", { class: `status ${b.status}` }, b.status),
        b.waiting_on == null ? null : h("div", { class: "muted waiting", title: b.waiting_on.detail }, `waiting on ${b.waiting_on.reason}`),
      ),
      h("td", {}, bar(completed, failed, total), h("span", { class: "muted" }, `${completed + failed} / ${total}`)),
      h("td", {}, usd(b.cost_usd ?? 0)),
      h("td", { class: "tokens" }, tokens(b.usage.total_tokens)),
      h("td", {}, when(b.created_at)),
    )
  })
  show(
    root,
    h("h1", {}, "Batches"),
    page.data.length === 0
      ? h("p", { class: "muted" }, "No batches yet: create one with the API, the CLI or the SDK.")
      : h(
          "table",
          { id: "batches" },
          h("thead", {}, h("tr", {}, h("th", {}, "Batch"), h("th", {}, "Status"), h("th", {}, "Progress"), h("th", {}, "Cost"), h("th", {}, "Tokens"), h("th", {}, "Created"))),
          h("tbody", {}, rows),
        ),
    h(
      "div",
      { class: "row" },
      cursors.length === 0 ? null : h("a", { href: link(cursors.slice(0, -1)) }, "← Newer"),
      page.has_more && page.last_id !== null ? h("a", { href: link([...cursors, page.last_id]) }, "Older →") : null,
    ),
  )
}
