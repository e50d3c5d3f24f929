import { HttpServerResponse } from "@effect/platform"
import type { RowError, RowResponse } from "../domain/batch/events.js"
import type { StoredResponse } from "../projections/responseReads.js"
import { RetryLater, flexTimedOut, unavailable } from "./errors.js"

/** The server began to shut down while the flex request waited: it did not run, and may be sent again at once. */
export const shutDownFirst = () =>
  new RetryLater(unavailable("The server is shutting down: the flex request was taken out of the queue before it ran; send it again"), 1)

/** A flex request that found no free batch slot in its wait: 408, and when to try again. */
export const notStarted = (model: string, waitMs: number) =>
  new RetryLater(
    flexTimedOut(
      `No batch slot of model '${model}' came free within max_queue_wait_s (${waitMs / 1000} s); the request did not run. Retry later, raise max_queue_wait_s, or send it without service_tier flex`,
    ),
    Math.min(30, Math.max(1, waitMs / 4000)),
  )

const parsed = <A>(text: string | null): A | null => (text === null ? null : (JSON.parse(text) as A))

/**
 * A flex chat completion's answer: the model's, as its batch row stored it, marked `service_tier: "flex"`;
 * or the error the row ended with, in the OpenAI envelope, with the upstream's status where it gave one.
 */
export const flexChatAnswer = (stored: StoredResponse) => {
  const response = stored.row_status === "completed" ? parsed<RowResponse>(stored.row_response) : null
  if (response !== null && typeof response.body === "object" && response.body !== null) {
    return HttpServerResponse.unsafeJson({ ...(response.body as object), service_tier: "flex" }, { status: response.status_code })
  }
  const error = parsed<RowError>(stored.row_error) ?? parsed<RowError>(stored.batch_error) ?? {
    code: "server_error",
    message: `The request ended ${stored.row_status ?? stored.batch_status} without an answer`,
  }
  const status = error.status !== undefined && error.status >= 400 ? error.status : 502
  return HttpServerResponse.unsafeJson({ error: { message: error.message, type: status < 500 ? "invalid_request_error" : "server_error", param: null, code: error.code } }, { status })
}
