import { isObject } from "../json.js"

/** How long a flex request may wait for a batch slot when it does not say (sference's `max_queue_wait_s`). */
export const DEFAULT_FLEX_WAIT_S = 60
export const MIN_FLEX_WAIT_S = 5
export const MAX_FLEX_WAIT_S = 300

/** Fields that mean something to Sluice's tiers, never to the model's upstream. */
export const tierFields: ReadonlyArray<string> = ["service_tier", "max_queue_wait_s"]

export type FlexAsk =
  | { readonly _tag: "Interactive" }
  | { readonly _tag: "Flex"; readonly maxWaitMs: number }
  | { readonly _tag: "Refused"; readonly message: string; readonly param: string }

/**
 * What a request asks of the tiers: `service_tier: "flex"` waits for a batch slot, up to
 * `max_queue_wait_s` (5–300 s); any other tier is interactive. The wait bounds a start, so it means
 * nothing to a background request, which waits as long as its window.
 */
export const flexAsk = (body: unknown): FlexAsk => {
  if (!isObject(body)) return { _tag: "Interactive" }
  const wait = body["max_queue_wait_s"]
  if (wait !== undefined && wait !== null) {
    if (typeof wait !== "number" || !Number.isInteger(wait) || wait < MIN_FLEX_WAIT_S || wait > MAX_FLEX_WAIT_S) {
      return {
        _tag: "Refused",
        message: `max_queue_wait_s must be a whole number of seconds from ${MIN_FLEX_WAIT_S} to ${MAX_FLEX_WAIT_S}, got ${JSON.stringify(wait)}`,
        param: "max_queue_wait_s",
      }
    }
    if (body["background"] === true) {
      return { _tag: "Refused", message: "max_queue_wait_s bounds a flex request's wait to start; a background request waits as long as its window", param: "max_queue_wait_s" }
    }
  }
  if (body["service_tier"] !== "flex") return { _tag: "Interactive" }
  if (body["stream"] === true) {
    return { _tag: "Refused", message: "A flex request is answered whole: send it without stream, or with another service_tier", param: "stream" }
  }
  return { _tag: "Flex", maxWaitMs: 1000 * (typeof wait === "number" ? wait : DEFAULT_FLEX_WAIT_S) }
}
