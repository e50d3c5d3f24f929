import { randomBytes } from "node:crypto"
import { createWriteStream } from "node:fs"
import { rename, rm } from "node:fs/promises"
import { Readable, Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"

const LF = 10

/**
 * Streams a JSONL response body to `out` through a temporary file beside it, renamed into place
 * only once whole: a reader of `out` never sees half a download.
 */
export const saveJsonl = async (response: Response, out: string): Promise<{ lines: number; bytes: number }> => {
  const temporary = `${out}.${randomBytes(6).toString("hex")}.part`
  let bytes = 0
  let lines = 0
  let lastByte = LF
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length
      for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) lines++
      lastByte = chunk[chunk.length - 1] ?? lastByte
      done(null, chunk)
    },
  })
  try {
    const body = response.body === null ? Readable.from([]) : Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>)
    await pipeline(body, count, createWriteStream(temporary))
    await rename(temporary, out)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
  return { lines: lastByte === LF ? lines : lines + 1, bytes }
}
