/** One dispatched Server-Sent Event. */
export interface SseMessage {
  /** The last event id seen on the stream so far, as a reconnect sends it back in `Last-Event-ID`. */
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/** The text/event-stream wire format, decoded incrementally: chunks may split lines and events anywhere. */
export class SseDecoder {
  private buffer = ""
  private data: Array<string> = []
  private event = ""
  private lastId: string | undefined
  private afterCr = false
  /** The server's `retry:` advice in ms, if it gave one. */
  retryMs: number | undefined

  get lastEventId(): string | undefined {
    return this.lastId
  }

  push(chunk: string): Array<SseMessage> {
    this.buffer += chunk
    const messages: Array<SseMessage> = []
    let start = 0
    // A CR that ended the previous chunk may be the first half of a CRLF.
    if (this.afterCr && this.buffer.charCodeAt(0) === 10) start = 1
    this.afterCr = false
    for (;;) {
      const lf = this.buffer.indexOf("\n", start)
      const cr = this.buffer.indexOf("\r", start)
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf)
      if (end === -1) break
      const line = this.buffer.slice(start, end)
      start = end + 1
      if (end === cr) {
        if (start === this.buffer.length) this.afterCr = true
        else if (this.buffer.charCodeAt(start) === 10) start++
      }
      const message = this.line(line)
      if (message !== undefined) messages.push(message)
    }
    this.buffer = this.buffer.slice(start)
    return messages
  }

  private line(line: string): SseMessage | undefined {
    if (line === "") return this.dispatch()
    if (line.startsWith(":")) return undefined
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (field) {
      case "data":
        this.data.push(value)
        break
      case "event":
        this.event = value
        break
      case "id":
        if (!value.includes("\0")) this.lastId = value
        break
      case "retry":
        if (/^\d+$/.test(value)) this.retryMs = Number(value)
        break
    }
    return undefined
  }

  private dispatch(): SseMessage | undefined {
    const data = this.data
    const event = this.event
    this.data = []
    this.event = ""
    if (data.length === 0) return undefined
    return { id: this.lastId, event: event === "" ? "message" : event, data: data.join("\n") }
  }
}
