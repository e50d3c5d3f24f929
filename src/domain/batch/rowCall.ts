import type { ResponseObject } from "../api/ResponseObject.js"
import { isObject, type JsonObject as Obj } from "../json.js"
import { echoOf } from "../response/echo.js"
import { responseFrom } from "../response/fromCompletion.js"
import type { BatchEndpoint } from "./endpoint.js"
import type { RowError } from "./events.js"
import { BodyRejection, normalizeRowBody } from "./responsesBody.js"

/*
 * What a row sends upstream, by its batch's endpoint, and what its result body is. A chat row's stored
 * body is sent as it is and its result is the upstream's answer; so is an embeddings row's, to the
 * upstream's `/embeddings`. A Responses row is stored as sent (so its Response object can echo it, and a
 * rerun checks it again as a Responses row), converted to chat form each time it is sent, and its
 * result is the Response object of the upstream's chat completion.
 *
 * That Response object is made when the row settles and stored in its `row_completed` event, rather
 * than at each read: every reader (result pages, a result line, results.jsonl, `as_of`, the completion
 * events feed, output files) then answers it without knowing endpoints, a replay rebuilds the same, and
 * its ids are fixed once. The row's cost is counted from the upstream's own usage before the mapping.
 */

/** Where a row's call goes, after the model's `upstream_url`. */
export type UpstreamPath = "/chat/completions" | "/embeddings"

export const upstreamPathOf = (endpoint: BatchEndpoint): UpstreamPath => (endpoint === "/v1/embeddings" ? "/embeddings" : "/chat/completions")

export type RowRequest =
  | {
      readonly _tag: "Send"
      /** The JSON text sent, naming the model by its public id. */
      readonly body: string
      readonly path: UpstreamPath
      /** A Responses row's stored body, which its Response object echoes. */
      readonly responses: Obj | undefined
    }
  /** A stored body no create would have stored (a log written otherwise): the row fails without a call. */
  | { readonly _tag: "Refuse"; readonly error: RowError }

const refuse = (message: string): RowRequest => ({ _tag: "Refuse", error: { code: "invalid_request", message } })

/** A non-chat row's call, from its stored body's JSON text; a chat row's body is sent as it is, without this. */
export const rowRequest = (endpoint: BatchEndpoint, stored: string): RowRequest => {
  if (endpoint !== "/v1/responses") return { _tag: "Send", body: stored, path: upstreamPathOf(endpoint), responses: undefined }
  let body: unknown
  try {
    body = JSON.parse(stored)
  } catch {
    return refuse("The stored request body is not JSON")
  }
  if (!isObject(body)) return refuse("The stored request body is not a Responses API request object")
  const chat = normalizeRowBody(body)
  if (chat instanceof BodyRejection) return refuse(`The stored request body cannot be sent: ${chat.detail}`)
  return { _tag: "Send", body: JSON.stringify(chat), path: "/chat/completions", responses: body }
}

export interface ResponseIds {
  /** The row's answer's `request_id` (`req_<hex>`): its Response is `resp_<hex>`, its items `msg_<hex>`, …. */
  readonly requestId: string
  /** The public model id the row named. */
  readonly model: string
  /** Unix ms: when the batch was created (the request arrived) and when the answer came. */
  readonly createdAt: number
  readonly completedAt: number
}

/** Item ids of one Response: its hex, with a count from the second of a kind on. */
const itemIds = (hex: string) => {
  const made = new Map<string, number>()
  return (prefix: "msg" | "fc" | "rs" | "call") => {
    const n = (made.get(prefix) ?? 0) + 1
    made.set(prefix, n)
    return n === 1 ? `${prefix}_${hex}` : `${prefix}_${hex}_${n}`
  }
}

/** A Responses row's result body: the Response object `POST /v1/responses` answers for the same request and completion. */
export const responsesRowResult = (stored: Obj, completion: unknown, ids: ResponseIds): ResponseObject => {
  const hex = ids.requestId.replace(/^req_/, "")
  return responseFrom(
    { _tag: "Answered", status: 200, body: completion },
    {
      id: `resp_${hex}`,
      model: ids.model,
      createdAt: Math.floor(ids.createdAt / 1000),
      completedAt: Math.floor(ids.completedAt / 1000),
      serviceTier: "default",
      echo: echoOf(stored),
      newId: itemIds(hex),
    },
  )
}
