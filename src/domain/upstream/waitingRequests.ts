const GAUGE = "vllm:num_requests_waiting"
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g

const unescape = (value: string) => value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c))

/**
 * The requests waiting for room on `model`, read from a Prometheus text exposition: the series
 * labelled with that `model_name` (summed over engines), or every series when none is labelled by
 * model. Undefined when the gauge is absent or only describes other models.
 */
export const waitingRequests = (metrics: string, model: string): number | undefined => {
  let mine: number | undefined
  let unlabelled: number | undefined
  let labelledByModel = false
  for (const line of metrics.split("\n")) {
    if (!line.startsWith(GAUGE)) continue
    const rest = line.slice(GAUGE.length)
    let labels = ""
    let sample = rest
    if (rest.startsWith("{")) {
      const close = rest.lastIndexOf("}")
      if (close === -1) continue
      labels = rest.slice(1, close)
      sample = rest.slice(close + 1)
    } else if (!rest.startsWith(" ")) {
      continue
    }
    const value = Number(sample.trim().split(/\s+/)[0])
    if (!Number.isFinite(value)) continue
    let name: string | undefined
    for (const [, key, raw] of labels.matchAll(LABEL)) if (key === "model_name") name = unescape(raw ?? "")
    if (name === undefined) unlabelled = (unlabelled ?? 0) + value
    else {
      labelledByModel = true
      if (name === model) mine = (mine ?? 0) + value
    }
  }
  return mine ?? (labelledByModel ? undefined : unlabelled)
}
