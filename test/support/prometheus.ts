/** One scrape of a Prometheus text exposition: each sample by its name and labels. */
export interface Scrape {
  readonly text: string
  /** The sample's value, 0 when the series is absent (a counter that has not moved yet). */
  value(name: string, labels?: Record<string, string>): number
  /** The families the exposition declares (`# TYPE` lines). */
  readonly families: ReadonlySet<string>
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export const parseScrape = (text: string): Scrape => {
  const samples = new Map<string, Array<{ labels: Record<string, string>; value: number }>>()
  const families = new Set<string>()
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) families.add(line.split(" ")[2]!)
    const m = sampleLine.exec(line)
    if (m === null || line.startsWith("#")) continue
    const labels: Record<string, string> = {}
    for (const pair of (m[2] ?? "").matchAll(labelPair)) labels[pair[1]!] = pair[2]!
    const list = samples.get(m[1]!) ?? []
    list.push({ labels, value: Number(m[3]) })
    samples.set(m[1]!, list)
  }
  return {
    text,
    families,
    value: (name, labels = {}) => {
      const found = (samples.get(name) ?? []).find(
        (s) => Object.keys(s.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      )
      return found?.value ?? 0
    },
  }
}

export const scrape = async (baseUrl: string, token?: string): Promise<Scrape> => {
  const response = await fetch(`${baseUrl}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
  if (!response.ok) throw new Error(`/metrics answered ${response.status}: ${await response.text()}`)
  return parseScrape(await response.text())
}
