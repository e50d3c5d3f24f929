import { Effect } from "effect"
import { type FeedPosition, parseCompletionId } from "../domain/completion/feedPosition.js"
import type { FeedFrom } from "../projections/completionReads.js"
import { badRequest } from "./errors.js"
import { parseLimit } from "./pageParams.js"

type Param = string | ReadonlyArray<string> | undefined

export interface FeedParams {
  readonly stream_id?: Param
  readonly limit?: Param
  readonly starting_after?: Param
  readonly ending_before?: Param
  readonly wait_ms?: Param
}

/** The longest a call waits: sference's clients give up after 30 s, so an answer always comes before. */
export const MAX_WAIT_MS = 25_000

export interface FeedQuery {
  readonly streamId: string | null
  readonly limit: number
  readonly from: FeedFrom
  readonly waitMs: number
}

const single = (name: string, value: Param) =>
  typeof value === "string" || value === undefined
    ? Effect.succeed(value)
    : Effect.fail(badRequest(`'${name}' may be given only once`, name))

const cursor = (name: string, value: Param) =>
  Effect.flatMap(single(name, value), (text): Effect.Effect<FeedPosition | undefined, ReturnType<typeof badRequest>> => {
    if (text === undefined) return Effect.succeed(undefined)
    const at = parseCompletionId(text)
    return at === undefined
      ? Effect.fail(badRequest(`'${name}' must be a completion_id from this feed, such as cmpl_0000000000002a000000, got '${text}'`, name))
      : Effect.succeed(at)
  })

const waitMs = (value: Param) =>
  Effect.flatMap(single("wait_ms", value), (text) => {
    if (text === undefined) return Effect.succeed(0)
    return /^[0-9]{1,16}$/.test(text)
      ? Effect.succeed(Math.min(Number(text), MAX_WAIT_MS))
      : Effect.fail(badRequest(`'wait_ms' must be a whole number of milliseconds, 0 or more (above ${MAX_WAIT_MS} it waits ${MAX_WAIT_MS}), got '${text}'`, "wait_ms"))
  })

const streamId = (value: Param) =>
  Effect.flatMap(single("stream_id", value), (text) =>
    text === "" ? Effect.fail(badRequest(`'stream_id' must be a stream's ID, got ''`, "stream_id")) : Effect.succeed(text ?? null),
  )

/** `GET /v1/responses/events`'s query, or the 400 naming the parameter at fault. */
export const parseFeedQuery = (params: FeedParams) =>
  Effect.gen(function* () {
    const stream = yield* streamId(params.stream_id)
    const limit = yield* parseLimit(params.limit, 100, 20)
    const after = yield* cursor("starting_after", params.starting_after)
    const before = yield* cursor("ending_before", params.ending_before)
    if (after !== undefined && before !== undefined) {
      return yield* Effect.fail(
        badRequest("'starting_after' and 'ending_before' cannot be given together: give one cursor, or neither for the newest events", "ending_before"),
      )
    }
    const from: FeedFrom =
      after !== undefined ? { kind: "after", at: after } : before !== undefined ? { kind: "before", at: before } : { kind: "newest" }
    return { streamId: stream, limit, from, waitMs: yield* waitMs(params.wait_ms) } satisfies FeedQuery
  })
