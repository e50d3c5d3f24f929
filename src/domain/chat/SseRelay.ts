import { isObject } from "../json.js"

const BOUNDARY = /\r?\n\r?\n/
const encoder = new TextEncoder()

/**
 * Passes a Server-Sent Events answer on an event at a time, as each one is complete. It keeps the
 * `usage` the stream reports at its end, and drops that usage-only chunk when the caller did not ask
 * for it (Sluice asks the upstream for it on every stream, to count the answer's cost).
 */
export class SseRelay {
  usage: unknown = undefined
  #pending = ""
  readonly #decoder = new TextDecoder()

  constructor(private readonly passUsageChunk: boolean) {}

  push(bytes: Uint8Array): Array<Uint8Array> {
    this.#pending += this.#decoder.decode(bytes, { stream: true })
    return this.#drain(false)
  }

  /** What is left once the upstream has ended, an unterminated last event included. */
  end(): Array<Uint8Array> {
    this.#pending += this.#decoder.decode()
    return this.#drain(true)
  }

  #drain(final: boolean): Array<Uint8Array> {
    const out: Array<Uint8Array> = []
    for (let match = BOUNDARY.exec(this.#pending); match !== null; match = BOUNDARY.exec(this.#pending)) {
      const end = match.index + match[0].length
      const event = this.#pending.slice(0, end)
      this.#pending = this.#pending.slice(end)
      if (this.#keep(event)) out.push(encoder.encode(event))
    }
    if (final && this.#pending.length > 0) {
      if (this.#keep(this.#pending)) out.push(encoder.encode(this.#pending))
      this.#pending = ""
    }
    return out
  }

  #keep(event: string): boolean {
    for (const line of event.split(/\r?\n/)) {
      if (!line.startsWith("data:") || !line.includes('"usage"')) continue
      let chunk: unknown
      try {
        chunk = JSON.parse(line.slice(5))
      } catch {
        continue
      }
      if (!isObject(chunk) || !isObject(chunk["usage"])) continue
      this.usage = chunk["usage"]
      const choices = chunk["choices"]
      if (!this.passUsageChunk && Array.isArray(choices) && choices.length === 0) return false
    }
    return true
  }
}
