import { type Batch, call, type FileObject, fileContent, finalStatuses } from "./api.js"
import { h } from "./dom.js"

const kinds = [
  { kind: "input", label: "Input file", field: "input_file_id" },
  { kind: "output", label: "Output file", field: "output_file_id" },
  { kind: "error", label: "Error file", field: "error_file_id" },
] as const

const size = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`

/** Hands the file to the browser as a download, under its own name. */
const save = async (key: string, file: FileObject) => {
  const url = URL.createObjectURL(await fileContent(key, file.id))
  const link = h("a", { href: url, download: file.filename, hidden: true })
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}

/** What a batch's files are, for redrawing them only when they change: a file-based batch gains its outputs once final. */
export const filesKey = (b: Batch) => `${b.input_file_id}|${b.output_file_id}|${b.error_file_id}|${finalStatuses.has(b.status)}`

/**
 * A file-based batch's input, output and error files, each a link that downloads it; nothing for an
 * inline batch. A file that cannot be read (an input deleted since) says why instead.
 */
export const batchFiles = async (key: string, batch: Batch, onError: (message: string) => void): Promise<Array<HTMLElement>> => {
  if (batch.input_file_id === null) return []
  const final = finalStatuses.has(batch.status)
  return Promise.all(
    kinds.map(async ({ kind, label, field }) => {
      const id = batch[field]
      if (id === null) {
        const why = !final ? "once the batch is final" : kind === "output" ? "none: no row completed" : "none: every row completed"
        return h("div", {}, label, h("b", { id: `file-${kind}`, class: "muted" }, why))
      }
      try {
        const file = await call<FileObject>(key, "GET", `/v1/files/${encodeURIComponent(id)}`)
        const download = (event: Event) => {
          event.preventDefault()
          save(key, file).catch((error: unknown) => onError(`Could not download ${file.filename}: ${(error as Error).message}`))
        }
        return h(
          "div",
          {},
          label,
          h("b", { id: `file-${kind}` }, h("a", { id: `download-${kind}`, href: `/v1/files/${id}/content`, "data-file": id, onclick: download }, file.filename)),
          h("span", { class: "muted" }, `${id}, ${size(file.bytes)}`),
        )
      } catch (error) {
        return h("div", {}, label, h("b", { id: `file-${kind}`, class: "muted" }, `${id}: ${(error as Error).message}`))
      }
    }),
  )
}
