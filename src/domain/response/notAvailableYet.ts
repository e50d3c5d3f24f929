import { isObject, type JsonObject as Obj } from "../json.js"
import { BodyRejection } from "./chatForm.js"

export const NotAvailableYetMessage = {
  background:
    "background responses are not available on this server yet: send the request without background, and it is answered when done",
  streamId: "streams are not available on this server yet: send the request without metadata.stream_id",
} as const

/** The modes of `POST /v1/responses` this server does not run yet: queued work, in the background or in a stream. */
export const notAvailableYet = (body: Obj): BodyRejection | undefined => {
  if (body["background"] === true) return new BodyRejection(NotAvailableYetMessage.background, ".background")
  const metadata = body["metadata"]
  if (isObject(metadata) && metadata["stream_id"] !== undefined && metadata["stream_id"] !== null)
    return new BodyRejection(NotAvailableYetMessage.streamId, ".metadata.stream_id")
  return undefined
}
