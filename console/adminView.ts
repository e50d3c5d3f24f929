import { ApiError, call } from "./api.js"
import { bar, h, show } from "./dom.js"
import { session } from "./session.js"

interface ModelState {
  readonly id: string
  readonly batch_concurrency: number
  readonly concurrency: number
  readonly pushback: number
  readonly slots_limit: number
  readonly slots_in_use: number
  readonly running: number
  readonly queued: number
  readonly interactive_in_flight: number
  readonly lease_owner: string
}

const tokenForm = (root: HTMLElement, problem?: string) => {
  const input = h("input", { type: "password", name: "adminToken", autocomplete: "off", required: true }) as HTMLInputElement
  show(
    root,
    h(
      "form",
      {
        class: "signin",
        onsubmit: (event: Event) => {
          event.preventDefault()
          session.setAdminToken(input.value.trim())
          dispatchEvent(new HashChangeEvent("hashchange"))
        },
      },
      h("h1", {}, "Models"),
      h("label", {}, "Admin token (SLUICE_ADMIN_TOKEN)", input),
      h("button", { class: "primary", type: "submit" }, "Show models"),
      problem === undefined ? null : h("p", { class: "error", role: "alert" }, problem),
    ),
  )
}

/** Every model's slots against its limit, queue, pushback and lease owner, read again every second. */
export const adminView = async (root: HTMLElement, signal: AbortSignal) => {
  const token = session.adminToken()
  if (token === null) return tokenForm(root)
  const table = h("tbody", {})
  const stamp = h("p", { class: "muted" })
  const load = async () => {
    const list = await call<{ instance: string; data: ReadonlyArray<ModelState> }>(token, "GET", "/admin/v1/models")
    table.replaceChildren(
      ...list.data.map((m) =>
        h(
          "tr",
          { "data-model": m.id },
          h("td", {}, m.id),
          h("td", {}, bar(m.slots_in_use, 0, m.slots_limit), h("span", { class: "slots" }, `${m.slots_in_use} / ${m.slots_limit}`)),
          h("td", {}, String(m.batch_concurrency)),
          h("td", { class: "queued" }, String(m.queued)),
          h("td", {}, String(m.running)),
          h("td", {}, m.pushback === 0 ? "none" : `−${m.pushback} slots`),
          h("td", {}, String(m.interactive_in_flight)),
          h("td", {}, m.lease_owner),
        ),
      ),
    )
    stamp.textContent = `From instance ${list.instance}, ${new Date().toLocaleTimeString()}`
  }
  try {
    await load()
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return tokenForm(root, `This admin token was not accepted: ${error.message}`)
    throw error
  }
  show(
    root,
    h("h1", {}, "Models"),
    h(
      "table",
      { id: "models" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["Model", "Slots in use / limit", "batch_concurrency", "Queued", "Running", "Pushback", "Interactive", "Lease owner"].map((t) =>
            h("th", {}, t),
          ),
        ),
      ),
      table,
    ),
    stamp,
  )
  const timer = setInterval(() => void load().catch(() => undefined), 1000)
  signal.addEventListener("abort", () => clearInterval(timer))
}
