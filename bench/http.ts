import http from "node:http"

export interface Reply {
  readonly status: number
  readonly body: Buffer
}

/** A keep-alive node:http agent: per-request overhead far below fetch's, so small timings stay honest. */
export const keepAliveAgent = (maxSockets: number) => new http.Agent({ keepAlive: true, maxSockets })

export const request = (
  agent: http.Agent,
  url: string,
  options: { readonly method?: string; readonly headers?: http.OutgoingHttpHeaders; readonly body?: Buffer | string } = {},
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : typeof options.body === "string" ? Buffer.from(options.body) : options.body
    const req = http.request(
      url,
      {
        method: options.method ?? "GET",
        agent,
        headers: { ...options.headers, ...(payload === undefined ? {} : { "content-length": payload.length }) },
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("error", reject)
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
      },
    )
    req.on("error", reject)
    req.end(payload)
  })
