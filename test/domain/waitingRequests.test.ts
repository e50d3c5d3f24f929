import { describe, expect, it } from "vitest"
import { waitingRequests } from "../../src/domain/upstream/waitingRequests.js"
import { renderMetrics } from "../../src/sim/PrometheusMetrics.js"
import { modelCounters } from "../../src/sim/SimStats.js"

describe("reading vLLM's num_requests_waiting gauge", () => {
  it("reads the series of the model, as vLLM labels it", () => {
    const text = [
      "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
      "# TYPE vllm:num_requests_waiting gauge",
      'vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 3.0',
      'vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 2.0',
      'vllm:num_requests_waiting{engine="0",model_name="other"} 40.0',
      'vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 16.0',
    ].join("\n")
    expect(waitingRequests(text, "Qwen/Qwen3-8B")).toBe(5)
    expect(waitingRequests(text, "other")).toBe(40)
    expect(waitingRequests(text, "absent")).toBeUndefined()
  })

  it("takes an unlabelled gauge as the whole server's", () => {
    expect(waitingRequests("vllm:num_requests_waiting 7\n", "any")).toBe(7)
  })

  it("answers nothing for a server without the gauge, or with an unreadable one", () => {
    expect(waitingRequests("", "m")).toBeUndefined()
    expect(waitingRequests("llamacpp:requests_deferred 3\n", "m")).toBeUndefined()
    expect(waitingRequests("vllm:num_requests_waiting_total 3\nvllm:num_requests_waiting{model_name=\"m\"} NaN\n", "m")).toBeUndefined()
    expect(waitingRequests("<html>Not Found</html>", "m")).toBeUndefined()
  })

  it("reads the simulator's exposition", () => {
    const a = modelCounters("glm-5.3-flash")
    const b = modelCounters('odd "name"')
    a.waiting = 4
    b.waiting = 1
    const text = renderMetrics([a, b])
    expect(waitingRequests(text, "glm-5.3-flash")).toBe(4)
    expect(waitingRequests(text, 'odd "name"')).toBe(1)
  })
})
