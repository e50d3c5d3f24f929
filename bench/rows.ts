/** One batch request as a client sends it: the body is what Sluice forwards upstream unchanged. */
export interface Row {
  readonly custom_id: string
  readonly body: {
    readonly model: string
    readonly messages: ReadonlyArray<{ readonly role: "user"; readonly content: string }>
    readonly max_tokens: number
  }
}

const row = (i: number, model: string, content: string): Row => ({
  custom_id: `r${i}`,
  body: { model, messages: [{ role: "user", content }], max_tokens: 8 },
})

/** Small rows (about 100 bytes), as in the throughput scenarios: Sluice's per-row cost dominates. */
export const smallRows = (n: number, model: string): Array<Row> =>
  Array.from({ length: n }, (_, i) => row(i, model, `question ${i}`))

const PROSE =
  "Summarize the following passage in two sentences, keeping every named entity and number exactly as written. " +
  "The committee met on a Tuesday to review the quarterly figures, the backlog of open tickets, the hiring plan "

/** Rows padded with prose so that `n` of them make a create body of about `totalBytes`. */
export const sizedRows = (n: number, model: string, totalBytes: number): Array<Row> => {
  const probe = batchBody(Array.from({ length: n }, (_, i) => row(i, model, ""))).length
  const pad = Math.max(0, Math.floor((totalBytes - probe) / n))
  const text = PROSE.repeat(Math.ceil(pad / PROSE.length) + 1)
  return Array.from({ length: n }, (_, i) => {
    const head = `Item ${i}. `
    return row(i, model, head + text.slice(0, Math.max(0, pad - head.length)))
  })
}

export const batchBody = (rows: ReadonlyArray<Row>): string => JSON.stringify({ requests: rows })

/** The bytes Sluice sends upstream for each row: the row's body, serialized. */
export const upstreamBodies = (rows: ReadonlyArray<Row>): Array<string> => rows.map((r) => JSON.stringify(r.body))
