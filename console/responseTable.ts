import type { ResponseObject } from "./api.js"
import { h, tokens, when } from "./dom.js"

/** Responses as rows, each opening its own page: the responses list's and a stream's items. */
export const responseTable = (id: string, responses: ReadonlyArray<ResponseObject>) =>
  h(
    "table",
    { id },
    h(
      "thead",
      {},
      h("tr", {}, ...["Response", "custom_id", "Model", "Status", "Background", "Tokens", "Created"].map((t) => h("th", {}, t))),
    ),
    h(
      "tbody",
      {},
      responses.map((r) =>
        h(
          "tr",
          { class: "clickable", "data-response": r.id, onclick: () => (location.hash = `#/responses/${r.id}`) },
          h("td", {}, h("a", { href: `#/responses/${r.id}` }, r.id)),
          h("td", { class: "custom-id" }, r.metadata["custom_id"] ?? ""),
          h("td", { class: "model" }, r.model),
          h("td", {}, h("span", { class: `status ${r.status}` }, r.status)),
          h("td", { class: "background" }, r.background ? "yes" : "no"),
          h("td", { class: "tokens" }, r.usage === undefined ? "" : tokens(r.usage.total_tokens)),
          h("td", {}, when(r.created_at)),
        ),
      ),
    ),
  )
