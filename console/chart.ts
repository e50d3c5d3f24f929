const NS = "http://www.w3.org/2000/svg"

const svg = (tag: string, attrs: Record<string, string | number>, ...children: Array<Node | string>) => {
  const el = document.createElementNS(NS, tag)
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value))
  el.append(...children)
  return el
}

export type Point = readonly [x: number, y: number]

export interface Series {
  readonly points: ReadonlyArray<Point>
  readonly class: string
  /** A filled area under the line, rather than the line alone. */
  readonly area?: boolean
}

export interface ChartOptions {
  readonly id: string
  readonly title: string
  readonly xRange: readonly [number, number]
  readonly yMax: number
  /** What the ends of the axes say: the first and last x, and the top y. */
  readonly xLabels: readonly [string, string]
  readonly yLabel: string
  readonly width?: number
  readonly height?: number
}

const PAD = { left: 44, right: 10, top: 10, bottom: 22 }

/** A line chart of one or more series over a shared x range, 0 at the bottom: plain SVG, no library. */
export const lineChart = (options: ChartOptions, ...series: ReadonlyArray<Series>) => {
  const width = options.width ?? 640
  const height = options.height ?? 160
  const [x0, x1] = options.xRange
  const plotW = width - PAD.left - PAD.right
  const plotH = height - PAD.top - PAD.bottom
  const x = (v: number) => PAD.left + (x1 === x0 ? 0 : ((v - x0) / (x1 - x0)) * plotW)
  const y = (v: number) => PAD.top + plotH - (options.yMax <= 0 ? 0 : (Math.min(v, options.yMax) / options.yMax) * plotH)
  const path = (points: ReadonlyArray<Point>) => points.map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(" ")
  const bottom = PAD.top + plotH
  return svg(
    "svg",
    { id: options.id, class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": options.title },
    svg("title", {}, options.title),
    svg("line", { class: "axis", x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: bottom }),
    svg("line", { class: "axis", x1: PAD.left, y1: bottom, x2: width - PAD.right, y2: bottom }),
    svg("text", { class: "label", x: PAD.left - 4, y: PAD.top + 9, "text-anchor": "end" }, options.yLabel),
    svg("text", { class: "label", x: PAD.left - 4, y: bottom, "text-anchor": "end" }, "0"),
    svg("text", { class: "label", x: PAD.left, y: height - 6 }, options.xLabels[0]),
    svg("text", { class: "label", x: width - PAD.right, y: height - 6, "text-anchor": "end" }, options.xLabels[1]),
    ...series.map((s) =>
      s.area === true && s.points.length > 0
        ? svg("polygon", { class: s.class, points: `${x(s.points[0]![0]).toFixed(1)},${bottom} ${path(s.points)} ${x(s.points[s.points.length - 1]![0]).toFixed(1)},${bottom}` })
        : svg("polyline", { class: s.class, points: path(s.points) }),
    ),
  )
}

/** A span of ms as people say it: 45 s, 3 min 20 s, 2 h 5 min. */
export const duration = (ms: number) => {
  const s = Math.round(ms / 1000)
  return s < 60 ? `${s} s` : s < 3600 ? `${Math.floor(s / 60)} min${s % 60 === 0 ? "" : ` ${s % 60} s`}` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
}
