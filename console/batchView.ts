import { type Batch, type BatchProgress, call, finalStatuses, type Page, type ResultLine, streamEvents } from "./api.js"
import { batchFiles, filesKey } from "./batchFiles.js"
import { duration, lineChart, type Point } from "./chart.js"
import { bar, h, show, usd, when } from "./dom.js"
import { eta, Pace } from "./progress.js"
import { tokenFacts } from "./usage.js"
import { waitingDetail, waitingFact } from "./waiting.js"

const RESULTS_PAGE = 20
/** How often a running batch's timeline is read again. */
const TIMELINE_EVERY_MS = 5_000

/** Rows settled over time, cumulative, from the batch's first start: the line climbs to the rows that ran. */
const timelineChart = (progress: BatchProgress, total: number) => {
  if (progress.started_at_ms === null) return h("p", { class: "muted" }, "No row has started yet.")
  const span = progress.ended_at_ms === null ? progress.settled.length * progress.bucket_ms : progress.ended_at_ms - progress.started_at_ms
  let sum = 0
  const points: Array<Point> = [[0, 0]]
  progress.settled.forEach((rows, i) => {
    sum += rows
    points.push([Math.min((i + 1) * progress.bucket_ms, span), sum])
  })
  const chart = lineChart(
    {
      id: "timeline-chart",
      title: `Rows settled over time: ${sum} of ${total}`,
      xRange: [0, Math.max(span, 1)],
      yMax: Math.max(total, 1),
      xLabels: ["first start", progress.ended_at_ms === null ? `${duration(span)} so far` : duration(span)],
      yLabel: String(total),
    },
    { points, class: "settled", area: true },
  )
  chart.setAttribute("data-settled", String(sum))
  return chart
}
const settles = new Set(["row_completed", "row_failed", "row_cancelled"])

interface Filter {
  readonly status: string
  readonly code: string
}

/** One batch: its live progress from the events stream, cancel and delete, and its results, filtered and paged. */
export const batchView = async (root: HTMLElement, key: string, batchId: string, signal: AbortSignal) => {
  let batch = await call<Batch>(key, "GET", `/v1/batches/${batchId}`)
  const pace = new Pace()
  const facts = h("div", { class: "facts" })
  const progress = h("div", { id: "progress" })
  const actions = h("div", { class: "row" })
  const notice = h("div", { role: "alert" })
  const files = h("div", { id: "files", class: "facts" })
  let drawnFiles = ""
  const timeline = h("div", { id: "timeline" })
  const results = h("div", { id: "results" })
  const detail = h("div", { id: "detail" })
  // Counted from the stream, which begins with the batch's history: every row event is in it once.
  let settled = 0
  let progressRead: BatchProgress | undefined

  /** A running batch's pace over the last seconds; a final one's own rate, from its first start to its end. */
  const rowsPerSecond = () => {
    if (!finalStatuses.has(batch.status)) return pace.rate(Date.now()).toFixed(1)
    const rate = progressRead?.ended_at_ms == null ? null : progressRead.rows_per_second
    return rate == null ? "—" : rate.toFixed(1)
  }

  const draw = () => {
    const { total, completed, failed } = batch.request_counts
    const done = Math.max(settled, completed + failed)
    const rate = pace.rate(Date.now())
    facts.replaceChildren(
      ...[
        ["Status", h("span", { class: `status ${batch.status}`, id: "status" }, batch.status)],
        // Broken, where the box is too narrow, after a slash rather than inside a word.
        ["Endpoint", h("span", { id: "endpoint" }, batch.endpoint.split(/(?<=\/)/).flatMap((part) => [part, h("wbr")]))],
        ["Priority", h("span", { id: "priority" }, batch.priority)],
        ["Waiting on", waitingFact(batch.waiting_on)],
        ["Settled", h("span", { id: "settled" }, `${done} / ${total}`)],
        ["Completed", String(completed)],
        ["Failed", String(failed)],
        ["Rows/s", h("span", { id: "rate" }, rowsPerSecond())],
        [
          "ETA",
          finalStatuses.has(batch.status)
            ? "done"
            : batch.estimated_completion_at != null
              ? eta(Math.max(0, batch.estimated_completion_at - Date.now() / 1000), 1)
              : eta(total - done, rate),
        ],
        ["Rows ahead", finalStatuses.has(batch.status) ? "—" : String(batch.rows_ahead ?? "—")],
        ["Cost", usd(batch.cost_usd ?? 0)],
        ["Tokens", h("span", { id: "tokens" }, tokenFacts(batch.usage))],
        ["Created", when(batch.created_at)],
      ].map(([label, value]) => h("div", {}, String(label), h("b", {}, value as Node | string))),
    )
    progress.replaceChildren(bar(completed, failed, total, true), waitingDetail(batch.waiting_on))
    const cancellable = batch.status === "validating" || batch.status === "in_progress"
    actions.replaceChildren(
      h("button", { id: "cancel", class: "danger", disabled: !cancellable, onclick: cancel }, "Cancel batch"),
      h("button", { id: "delete", class: "danger", onclick: remove }, "Delete batch"),
    )
    if (filesKey(batch) !== drawnFiles) {
      drawnFiles = filesKey(batch)
      const drawing = drawnFiles
      void batchFiles(key, batch, (message) => notice.replaceChildren(h("p", { class: "error" }, message))).then((links) => {
        if (drawing === drawnFiles) files.replaceChildren(...links)
      })
    }
  }
  const loadProgress = async () => {
    progressRead = await call<BatchProgress>(key, "GET", `/v1/batches/${batchId}/progress`)
    timeline.replaceChildren(h("h2", {}, "Progress"), timelineChart(progressRead, batch.request_counts.total))
    draw()
  }
  const refresh = async () => {
    try {
      batch = await call<Batch>(key, "GET", `/v1/batches/${batchId}`)
      draw()
      if (finalStatuses.has(batch.status) && progressRead?.ended_at_ms == null) await loadProgress()
    } catch (error) {
      if (!signal.aborted) notice.replaceChildren(h("p", { class: "error" }, String((error as Error).message)))
    }
  }
  // The counts and cost come from the batch object, fetched at most twice a second while rows settle.
  let pending: ReturnType<typeof setTimeout> | undefined
  const refreshSoon = () => {
    pending ??= setTimeout(() => {
      pending = undefined
      void refresh()
    }, 500)
  }
  const cancel = async () => {
    try {
      batch = await call<Batch>(key, "POST", `/v1/batches/${batchId}/cancel`)
      draw()
    } catch (error) {
      notice.replaceChildren(h("p", { class: "error" }, String((error as Error).message)))
    }
  }
  const remove = async () => {
    if (!confirm(`Delete ${batchId} and all its results?`)) return
    try {
      await call(key, "DELETE", `/v1/batches/${batchId}`)
      location.hash = "#/batches"
    } catch (error) {
      notice.replaceChildren(h("p", { class: "error" }, String((error as Error).message)))
    }
  }

  let filter: Filter = { status: "", code: "" }
  const cursors: Array<string> = []
  const status = h(
    "select",
    { id: "filter-status", onchange: () => applyFilter() },
    ...["", "queued", "running", "completed", "failed", "cancelled", "expired"].map((s) => h("option", { value: s }, s === "" ? "any status" : s)),
  ) as HTMLSelectElement
  const code = h("input", { id: "filter-code", placeholder: "error code, e.g. timeout", onchange: () => applyFilter() }) as HTMLInputElement
  const applyFilter = () => {
    filter = { status: status.value, code: code.value.trim() }
    cursors.length = 0
    void loadResults()
  }
  const loadResults = async () => {
    const params = new URLSearchParams({ limit: String(RESULTS_PAGE) })
    const after = cursors[cursors.length - 1]
    if (after !== undefined) params.set("after", after)
    if (filter.status !== "") params.set("status", filter.status)
    if (filter.code !== "") params.set("error_code", filter.code)
    try {
      const page = await call<Page<ResultLine>>(key, "GET", `/v1/batches/${batchId}/results?${params}`)
      results.replaceChildren(
        h(
          "table",
          { id: "results-table" },
          h("thead", {}, h("tr", {}, h("th", {}, "Result"), h("th", {}, "custom_id"), h("th", {}, "Status"), h("th", {}, "Error"))),
          h(
            "tbody",
            {},
            page.data.map((line) =>
              h(
                "tr",
                { class: "clickable", "data-result": line.id, onclick: () => void open(line.id) },
                h("td", {}, line.id),
                h("td", {}, line.custom_id),
                h("td", {}, h("span", { class: `status ${line.status}` }, line.status)),
                h("td", {}, line.error === null ? "" : `${line.error.code}: ${line.error.message}`),
              ),
            ),
          ),
        ),
        page.data.length === 0 ? h("p", { class: "muted" }, "No results match.") : "",
        h(
          "div",
          { class: "row" },
          cursors.length === 0 ? null : h("button", { id: "results-newer", onclick: () => (cursors.pop(), void loadResults()) }, "← Previous"),
          page.has_more && page.last_id !== null
            ? h("button", { id: "results-older", onclick: () => (cursors.push(page.last_id!), void loadResults()) }, "Next →")
            : null,
        ),
      )
    } catch (error) {
      results.replaceChildren(h("p", { class: "error" }, String((error as Error).message)))
    }
  }
  const open = (resultId: string) =>
    openResult(resultId).catch((error: unknown) => detail.replaceChildren(h("p", { class: "error" }, String((error as Error).message))))
  const openResult = async (resultId: string) => {
    for (const row of results.querySelectorAll("tr.selected")) row.classList.remove("selected")
    results.querySelector(`tr[data-result="${resultId}"]`)?.classList.add("selected")
    const line = await call<ResultLine & { request: unknown }>(key, "GET", `/v1/batches/${batchId}/results/${resultId}`)
    detail.replaceChildren(
      h("h2", {}, `${line.id} (${line.custom_id})`),
      h("h3", {}, "Request"),
      h("pre", { id: "detail-request" }, JSON.stringify(line.request, null, 2)),
      h("h3", {}, line.error === null ? "Response" : "Error"),
      h("pre", { id: "detail-response" }, JSON.stringify(line.error ?? line.response, null, 2)),
    )
  }

  draw()
  void loadProgress().catch(() => undefined)
  show(
    root,
    h("h1", {}, batchId),
    progress,
    facts,
    timeline,
    files,
    actions,
    notice,
    h("h2", {}, "Results"),
    h("div", { class: "row" }, status, code),
    results,
    detail,
  )
  void loadResults()
  const ticker = setInterval(draw, 1000)
  // A waiting batch has no events to refresh it: its object, with why it waits, is read again with the timeline.
  const timelineTicker = setInterval(() => {
    if (finalStatuses.has(batch.status)) return
    void loadProgress().catch(() => undefined)
    void refresh()
  }, TIMELINE_EVERY_MS)
  signal.addEventListener("abort", () => {
    clearInterval(ticker)
    clearInterval(timelineTicker)
    clearTimeout(pending)
  })

  if (finalStatuses.has(batch.status)) return
  try {
    await streamEvents(
      key,
      batchId,
      (message) => {
        if (settles.has(message.event)) {
          settled++
          // The event's own time: the history's events fall outside the window the pace is read over.
          pace.settle((JSON.parse(message.data) as { at?: number }).at ?? Date.now())
          draw()
        }
        if (message.event.startsWith("batch_")) void refresh()
        else if (settles.has(message.event)) refreshSoon()
      },
      signal,
    )
    // The stream ends once the batch is done.
    await refresh()
    void loadResults()
  } catch (error) {
    if (!signal.aborted) notice.replaceChildren(h("p", { class: "error" }, `Live updates stopped: ${String((error as Error).message)}`))
  }
}
