import { Effect } from "effect"
import { BatchWriter } from "../actors/BatchWriter.js"
import { Dispatcher } from "../actors/Dispatcher.js"
import type { ResponseObject } from "../domain/api/ResponseObject.js"
import type { RowError, RowResponse } from "../domain/batch/events.js"
import { RESPONSE_ID_PREFIX } from "../domain/batch/subjects.js"
import type { ResponseEcho } from "../domain/response/echo.js"
import { responseFrom } from "../domain/response/fromCompletion.js"
import type { QueuedResponse } from "../domain/response/queuedResponse.js"
import { shownOf } from "../domain/response/standing.js"
import type { WaitingOn } from "../domain/waiting/waitingOn.js"
import type { ValidResponseRequest } from "../domain/response/validateRequest.js"
import { randomUUID } from "node:crypto"
import { DEFAULT_PRIORITY, type Priority } from "../domain/scheduling/priority.js"
import { Projector } from "../projections/Projector.js"
import { ReadModel } from "../projections/ReadModel.js"
import { type StoredResponse, responseReads } from "../projections/responseReads.js"
import type { Caller } from "./auth.js"
import { BatchAccess } from "./batchAccess.js"
import { notFound } from "./errors.js"
import { HttpSettings } from "./settings.js"

export const newResponseId = () => `${RESPONSE_ID_PREFIX}${randomUUID().replaceAll("-", "")}`

export const responseNotFound = (id: string) => notFound(`No response found with id '${id}'`, "response_not_found")

const parsedOrNull = <A>(text: string | null): A | null => (text === null ? null : (JSON.parse(text) as A))

/** The ids of a stored response's output items: the same on every read, as its id's hex with a count. */
const itemIds = (responseId: string) => {
  const hex = responseId.slice(RESPONSE_ID_PREFIX.length)
  const made = new Map<string, number>()
  return (prefix: "msg" | "fc" | "rs" | "call") => {
    const n = (made.get(prefix) ?? 0) + 1
    made.set(prefix, n)
    return n === 1 ? `${prefix}_${hex}` : `${prefix}_${hex}_${n}`
  }
}

/** The Response object of a response run as a one-row batch, from the read model. */
export const responseObjectOf = (stored: StoredResponse, waitingOn?: WaitingOn | null): ResponseObject => {
  const context = {
    id: stored.id,
    model: stored.model,
    createdAt: stored.created_at,
    completedAt: stored.completed_at ?? stored.created_at,
    serviceTier: stored.service_tier === "flex" ? ("flex" as const) : ("default" as const),
    echo: { ...(JSON.parse(stored.echo) as ResponseEcho), metadata: parsedOrNull<Record<string, string>>(stored.metadata) ?? {} },
    newId: itemIds(stored.id),
  }
  const shown = shownOf({
    batchStatus: stored.batch_status,
    rowStatus: stored.row_status,
    rowResponse: parsedOrNull<RowResponse>(stored.row_response),
    rowError: parsedOrNull<RowError>(stored.row_error),
    batchError: parsedOrNull<{ code: string; message: string }>(stored.batch_error),
  })
  const background = stored.background === 1
  // Only a response that waited among priorities shows one: a flex request always runs as standard.
  const queued =
    background || stored.stream_id !== null
      ? { priority: stored.priority ?? DEFAULT_PRIORITY, ...(waitingOn === undefined ? {} : { waiting_on: waitingOn }) }
      : {}
  const noAnswer = responseFrom({ _tag: "NoAnswer", message: "" }, context)
  switch (shown._tag) {
    case "InProgress":
      return { ...noAnswer, background, status: "in_progress", error: null, ...queued }
    case "Answered":
      return { ...responseFrom({ _tag: "Answered", status: shown.response.status_code, body: shown.response.body }, context), background, ...queued }
    case "Cancelled": {
      const answered =
        shown.response === null ? noAnswer : responseFrom({ _tag: "Answered", status: shown.response.status_code, body: shown.response.body }, context)
      return { ...answered, background, status: "cancelled", error: null, incomplete_details: null, completed_at: null, ...queued }
    }
    case "Failed":
      return { ...noAnswer, background, error: shown.error as ResponseObject["error"], ...queued }
  }
}

export interface QueueOptions {
  readonly background: boolean
  readonly serviceTier: "default" | "flex"
  readonly streamId: string | null
  readonly customId: string | null
  readonly endpoint: QueuedResponse["endpoint"]
  /** How long it may wait to start: past it, it fails as expired. */
  readonly windowMs: number
  /** Absent: standard (a flex request's). */
  readonly priority?: Priority
}

/**
 * Responses that wait for a model's batch slot (background ones, a stream's items): each is stored as
 * a one-row batch on its own subjects, run by the model's actor like any batch row, and read back
 * from the read model.
 */
export class QueuedResponses extends Effect.Service<QueuedResponses>()("Http/QueuedResponses", {
  effect: Effect.gen(function* () {
    const access = yield* BatchAccess
    const writer = yield* BatchWriter
    const projector = yield* Projector
    const dispatcher = yield* Dispatcher
    const settings = yield* HttpSettings
    const reads = responseReads(yield* ReadModel)

    const owned = (caller: Caller, id: string) => {
      const stored = reads.ofAccount(caller.account.id, id)
      return stored === undefined ? Effect.fail(responseNotFound(id)) : Effect.succeed(stored)
    }

    const queue = (caller: Caller, request: ValidResponseRequest, options: QueueOptions) =>
      Effect.gen(function* () {
        const id = newResponseId()
        const { seq, createdAt } = yield* writer
          .create({
            accountId: caller.account.id,
            keyId: caller.keyId,
            completionWindowMs: options.windowMs,
            metadata: Object.keys(request.echo.metadata).length === 0 ? null : { ...request.echo.metadata },
            requests: [{ custom_id: options.customId ?? id, model: request.model, body: request.chat }],
            batchId: id,
            ...(options.priority === undefined ? {} : { priority: options.priority }),
            response: {
              endpoint: options.endpoint,
              background: options.background,
              service_tier: options.serviceTier,
              stream_id: options.streamId,
              custom_id: options.customId,
              echo: { ...request.echo, metadata: undefined },
            },
          })
          .pipe(Effect.mapError(access.logDown))
        yield* projector.awaitSeq(seq)
        yield* Effect.forkDaemon(dispatcher.enqueueBatch(id, createdAt))
        return shown(reads.one(id)!)
      })

    const shown = (stored: StoredResponse) => responseObjectOf(stored, access.waiting.one(stored.id))

    const get = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        return shown(yield* owned(caller, id))
      })

    /** Cancels an unfinished response (its call, if running, finishes); a final one is answered unchanged. */
    const cancel = (caller: Caller, id: string) =>
      Effect.gen(function* () {
        yield* access.reachable
        yield* owned(caller, id)
        const written = yield* writer.execute(id, { type: "Cancel", at: yield* writer.now }).pipe(
          Effect.catchTags({
            BatchNotFound: () => Effect.fail(responseNotFound(id)),
            RowsStillRunning: () => Effect.fail(responseNotFound(id)),
            LogUnavailable: (e) => Effect.fail(access.logDown(e)),
          }),
        )
        yield* projector.awaitSeq(written.seq)
        dispatcher.dropBatch(id)
        return shown(yield* owned(caller, id))
      })

    /** A cancel no caller asked for (a flex request's client went away): final responses are left as they are. */
    const cancelQuietly = (id: string) =>
      Effect.flatMap(writer.now, (at) => writer.execute(id, { type: "Cancel", at })).pipe(
        Effect.tap(() => Effect.sync(() => dispatcher.dropBatch(id))),
        Effect.asVoid,
        Effect.catchAll((e) => Effect.logWarning(`response ${id} could not be cancelled: ${e._tag}`)),
      )

    /** Newest first; `after` is the id of the previous page's last response. */
    const list = (caller: Caller, limit: number, after: string | undefined, streamId: string | undefined) =>
      Effect.gen(function* () {
        yield* access.reachable
        let afterSeq: number | undefined
        if (after !== undefined) afterSeq = (yield* owned(caller, after)).seq
        const rows = reads.page(caller.account.id, limit, afterSeq, streamId)
        const data = rows.slice(0, limit).map(shown)
        return {
          object: "list" as const,
          data,
          first_id: data[0]?.id ?? null,
          last_id: data[data.length - 1]?.id ?? null,
          has_more: rows.length > limit,
        }
      })

    return { queue, get, cancel, cancelQuietly, list, windowMs: settings.completionWindowMs, reads } as const
  }),
}) {}
