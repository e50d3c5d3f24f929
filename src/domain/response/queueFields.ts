import { isObject, type JsonObject as Obj } from "../json.js"
import { BodyRejection } from "./chatForm.js"

/** What a queued response's own fields must be: a stream to join and a custom id, each a non-empty string. */
export const queueFields = (body: Obj): BodyRejection | undefined => {
  const metadata = body["metadata"]
  if (!isObject(metadata)) return undefined
  for (const key of ["stream_id", "custom_id"]) {
    const value = metadata[key]
    if (value !== undefined && (typeof value !== "string" || value.length === 0)) {
      return new BodyRejection(`metadata.${key} must be a non-empty string`, `.metadata.${key}`)
    }
  }
  return undefined
}
