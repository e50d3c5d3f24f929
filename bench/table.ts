import type { Figure, Skipped } from "./figures.js"

const number = (value: number, digits: number) =>
  Number.isNaN(value) ? "-" : value.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits })

const HEADER = ["id", "scenario", "backend", "figure", "median", "min", "max", "target", "met?"] as const
const RIGHT = new Set([4, 5, 6])

export const tableRows = (figures: ReadonlyArray<Figure>): Array<Array<string>> =>
  figures.map((f) => [
    f.id,
    f.scenario,
    f.backend,
    f.figure,
    number(f.median, f.digits),
    number(f.min, f.digits),
    number(f.max, f.digits),
    f.target === undefined ? "" : `${f.target.op === "<=" ? "≤" : "≥"} ${f.target.value.toLocaleString("en")}`,
    f.met === undefined ? "" : f.met ? "yes" : "no",
  ])

/** A Markdown table, padded so it also reads as plain text. */
export const renderTable = (figures: ReadonlyArray<Figure>, skipped: ReadonlyArray<Skipped>): string => {
  const rows = [...tableRows(figures), ...skipped.map((s) => [s.id, `skipped: ${s.reason}`, "", "", "", "", "", "", ""])]
  const widths = HEADER.map((h, i) => Math.max(h.length, ...rows.map((r) => [...r[i]!].length)))
  const pad = (cells: ReadonlyArray<string>) =>
    `| ${cells.map((c, i) => (RIGHT.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`
  const rule = `|${widths.map((w, i) => (RIGHT.has(i) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`
  return [pad(HEADER), rule, ...rows.map(pad)].join("\n")
}
