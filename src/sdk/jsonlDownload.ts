import { randomBytes } from "node:crypto"
import { createWriteStream } from "node:fs"
import { rename, rm, stat } from "node:fs/promises"
import { dirname } from "node:path"
import { Readable, Transform } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"
import { ResultsFileError } from "./errors.js"

const LF = 10

export interface Written {
  readonly lines: number
  readonly bytes: number
}

/** Copies a JSONL response body into `destination`, counting its lines and bytes. */
const copyCounting = async (response: Response, destination: NodeJS.WritableStream, end: boolean): Promise<Written> => {
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
  const body = response.body === null ? Readable.from([]) : Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>)
  await pipeline(body, count, destination, { end })
  return { lines: lastByte === LF ? lines : lines + 1, bytes }
}

/** Streams a JSONL response body into a stream the caller owns (standard output, say), leaving it open. */
export const writeJsonl = (response: Response, destination: NodeJS.WritableStream): Promise<Written> =>
  copyCounting(response, destination, false)

/** Checked before anything is downloaded: a results file cannot be written where there is no folder for it. */
export const checkResultsFolder = async (out: string): Promise<void> => {
  const folder = dirname(out)
  const found = await stat(folder).catch(() => undefined)
  if (found === undefined) throw new ResultsFileError(out, `the folder ${folder} does not exist`)
  if (!found.isDirectory()) throw new ResultsFileError(out, `${folder} is not a folder`)
}

/**
 * Streams a JSONL response body to `out` through a temporary file beside it, renamed into place
 * only once whole: a reader of `out` never sees half a download.
 */
export const saveJsonl = async (response: Response, out: string): Promise<Written> => {
  const temporary = `${out}.${randomBytes(6).toString("hex")}.part`
  try {
    const written = await copyCounting(response, createWriteStream(temporary), true)
    await rename(temporary, out)
    return written
  } catch (error) {
    await rm(temporary, { force: true })
    // The temporary file is ours, not the caller's: name the path they gave.
    if (typeof (error as NodeJS.ErrnoException).code === "string") {
      throw new ResultsFileError(out, (error as Error).message.replaceAll(temporary, out), error)
    }
    throw error
  }
}
