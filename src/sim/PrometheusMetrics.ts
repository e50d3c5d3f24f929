import type { ModelCounters } from "./SimStats.js"

const label = (value: string): string => value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

/** Prometheus text exposition, with the vLLM gauge names Sluice's pacer scrapes. */
export const renderMetrics = (models: Iterable<ModelCounters>): string => {
  let running = ""
  let waiting = ""
  let success = ""
  let answered = ""
  for (const model of models) {
    const name = `model_name="${label(model.name)}"`
    running += `vllm:num_requests_running{${name}} ${model.running}\n`
    waiting += `vllm:num_requests_waiting{${name}} ${model.waiting}\n`
    success += `vllm:request_success_total{${name}} ${model.answered.get(200) ?? 0}\n`
    for (const [status, count] of model.answered) answered += `sim_requests_total{${name},code="${status}"} ${count}\n`
  }
  return (
    "# HELP vllm:num_requests_running Number of requests currently being processed.\n" +
    "# TYPE vllm:num_requests_running gauge\n" +
    running +
    "# HELP vllm:num_requests_waiting Number of requests waiting for a concurrency slot.\n" +
    "# TYPE vllm:num_requests_waiting gauge\n" +
    waiting +
    "# HELP vllm:request_success_total Completions answered with status 200.\n" +
    "# TYPE vllm:request_success_total counter\n" +
    success +
    "# HELP sim_requests_total Chat-completion requests answered, by status.\n" +
    "# TYPE sim_requests_total counter\n" +
    answered
  )
}
