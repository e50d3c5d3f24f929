import { ApiError, call } from "./api.js"
import { lineChart } from "./chart.js"
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

interface ModelSample {
  readonly at: number
  readonly starts: number
  readonly starts_per_second: number
  readonly slots_in_use: number
  readonly slots_limit: number
}

interface History {
  readonly sample_ms: number
  readonly data: ReadonlyArray<{ readonly model: string; readonly samples: ReadonlyArray<ModelSample> }>
}

const HOUR_MS = 3_600_000

/** Each model's last hour at the instance: rows started per second, and slots in use under their limit. */
const historyCharts = (history: History, now: number) => {
  const xRange = [now - HOUR_MS, now] as const
  const xLabels = ["1 h ago", "now"] as const
  return history.data.flatMap(({ model, samples }) => {
    const peakStarts = Math.max(1, ...samples.map((s) => s.starts_per_second))
    const peakSlots = Math.max(1, ...samples.map((s) => Math.max(s.slots_limit, s.slots_in_use)))
    const starts = lineChart(
      { id: `starts-${model}`, title: `${model}: rows started per second, last hour`, xRange, yMax: peakStarts, xLabels, yLabel: `${peakStarts}/s`, height: 120 },
      { points: samples.map((s) => [s.at, s.starts_per_second]), class: "starts", area: true },
    )
    const slots = lineChart(
      { id: `slots-${model}`, title: `${model}: slots in use and their limit, last hour`, xRange, yMax: peakSlots, xLabels, yLabel: String(peakSlots), height: 120 },
      { points: samples.map((s) => [s.at, s.slots_in_use]), class: "in-use", area: true },
      { points: samples.map((s) => [s.at, s.slots_limit]), class: "limit" },
    )
    for (const chart of [starts, slots]) chart.setAttribute("data-samples", String(samples.length))
    starts.setAttribute("data-starts", String(samples.reduce((sum, s) => sum + s.starts, 0)))
    return [h("h3", {}, model), starts, slots]
  })
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
  const charts = h("div", { id: "history", class: "charts" })
  const loadHistory = async () => {
    const history = await call<History>(token, "GET", "/admin/v1/models/history")
    charts.replaceChildren(
      ...(history.data.length === 0 ? [h("p", { class: "muted" }, `The first sample comes ${history.sample_ms / 1000} s after the instance starts.`)] : historyCharts(history, Date.now())),
    )
  }
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
    h("h2", {}, "Last hour"),
    charts,
  )
  void loadHistory().catch(() => undefined)
  const timer = setInterval(() => void load().catch(() => undefined), 1000)
  const historyTimer = setInterval(() => void loadHistory().catch(() => undefined), 5000)
  signal.addEventListener("abort", () => {
    clearInterval(timer)
    clearInterval(historyTimer)
  })
}
