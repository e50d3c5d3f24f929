import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ResponseList, ResponseObject } from "../domain/api/ResponseObject.js"
import { BadRequest, Forbidden, NotFound, TooManyRequests, Unauthorized, Unavailable } from "./errors.js"

const ResponsePath = Schema.Struct({ response_id: Schema.String })
/** Query values stay strings here: the handler answers a bad one with the API's own 400 envelope. */
const param = (description: string) => Schema.optional(Schema.String).annotations({ description })

const ListParams = Schema.Struct({
  limit: param("1 to 100, default 20"),
  after: param("A response id: the responses created before it"),
  stream_id: param("Only this stream's items"),
})

const cancels =
  "Cancels a response still waiting to start; one whose call runs stays `in_progress` until the call ends, then reads " +
  "`cancelled` with whatever the call brought back. A final response is answered unchanged: final means final."

/** The responses that were queued (background ones, streams' items): read, listed and cancelled like batches. */
export const StoredResponsesGroup = HttpApiGroup.make("storedResponses")
  .add(
    HttpApiEndpoint.get("list", "/v1/responses")
      .setUrlParams(ListParams)
      .addSuccess(ResponseList)
      .addError(BadRequest)
      .annotateContext(OpenApi.annotations({ description: "The caller's queued responses (background ones and streams' items), newest first" })),
  )
  .add(HttpApiEndpoint.get("retrieve", "/v1/responses/:response_id").setPath(ResponsePath).addSuccess(ResponseObject).addError(NotFound))
  .add(
    HttpApiEndpoint.post("cancel", "/v1/responses/:response_id/cancel")
      .setPath(ResponsePath)
      .addSuccess(ResponseObject)
      .addError(NotFound)
      .annotateContext(OpenApi.annotations({ description: `OpenAI's cancel. ${cancels}` })),
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/responses/:response_id")
      .setPath(ResponsePath)
      .addSuccess(ResponseObject)
      .addError(NotFound)
      .annotateContext(OpenApi.annotations({ description: `sference's cancel: answers the Response, not a deletion. ${cancels}` })),
  )
  .addError(Unauthorized)
  .addError(Forbidden)
  .addError(TooManyRequests)
  .addError(Unavailable)
