import { HttpServerResponse } from "@effect/platform"
import { Option, Stream } from "effect"
import type { ResultReads } from "../projections/resultReads.js"

const PAGE_ROWS = 2_000
const PAGE_BYTES = 4 * 1024 * 1024

/**
 * Every result line of a batch, written page by page as each is read, so a batch of any size is
 * never held whole in memory. Pages are read one at a time as the client takes them: each line is
 * the row as it was when its page was read.
 */
export const resultsJsonlResponse = (results: ResultReads, batchId: string) =>
  HttpServerResponse.stream(
    Stream.paginate(0, (from) => {
      const page = results.linesJsonlBytes(batchId, from, PAGE_ROWS, PAGE_BYTES)
      return [page.bytes as Uint8Array, Option.fromNullable(page.next)] as const
    }).pipe(Stream.filter((bytes) => bytes.byteLength > 0)),
    { contentType: "application/x-ndjson; charset=utf-8", headers: { "cache-control": "no-cache" } },
  )
