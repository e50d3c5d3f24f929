import { isObject } from "../domain/json.js"

/** A request body parsed as a JSON object, or the message of the 400 OpenAI answers when it is not one. */
export const parseJsonObject = (body: string): Record<string, unknown> | string => {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return "We could not parse the JSON body of your request."
  }
  return isObject(json) ? json : "The request body must be a JSON object."
}
