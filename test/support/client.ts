import { ADMIN_TOKEN, BOOTSTRAP_KEY } from "./sluice.js"

export interface Answer<T = any> {
  readonly status: number
  readonly body: T
  readonly text: string
  readonly headers: Headers
}

/**
 * A small HTTP client for the tests: every call goes over loopback to the real server. The base URL
 * may be read at each call (a fixture's Sluice, started later or restarted on another port).
 */
export const client = (baseUrl: string | (() => string), key: string = BOOTSTRAP_KEY) => {
  const call = async <T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = { authorization: `Bearer ${key}` },
  ): Promise<Answer<T>> => {
    const response = await fetch((typeof baseUrl === "string" ? baseUrl : baseUrl()) + path, {
      method,
      headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    })
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: response.status, body: parsed as T, text, headers: response.headers }
  }
  const admin = (method: string, path: string, body?: unknown) =>
    call(method, path, body, { authorization: `Bearer ${ADMIN_TOKEN}` })
  const waitFinal = async (batchId: string, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const batch = await call("GET", `/v1/batches/${batchId}`)
      if (["completed", "failed", "expired", "cancelled"].includes(batch.body?.status)) return batch.body
      if (Date.now() > deadline) throw new Error(`batch ${batchId} did not finish: ${batch.text}`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const allResults = async (batchId: string, limit = 1000) => {
    const rows: Array<any> = []
    let after: string | undefined
    for (;;) {
      const page = await call("GET", `/v1/batches/${batchId}/results?limit=${limit}${after ? `&after=${after}` : ""}`)
      if (page.status !== 200) throw new Error(page.text)
      rows.push(...page.body.data)
      if (!page.body.has_more) return rows
      after = page.body.last_id
    }
  }
  return { call, admin, waitFinal, allResults }
}

export const chatRow = (customId: string, content: string, model = "glm-5.3-flash", extra: object = {}) => ({
  custom_id: customId,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model, messages: [{ role: "user", content }], ...extra },
})
