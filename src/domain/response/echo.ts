import { isObject, type JsonObject as Obj } from "../json.js"

/** The request's settings a Response object repeats, with OpenAI's defaults where the request left them out. */
export interface ResponseEcho {
  readonly instructions: string | null
  readonly max_output_tokens: number | null
  readonly temperature: number | null
  readonly top_p: number | null
  readonly tools: ReadonlyArray<unknown>
  readonly tool_choice: unknown
  readonly parallel_tool_calls: boolean
  readonly text: unknown
  readonly metadata: Readonly<Record<string, string>>
}

const numberOrNull = (value: unknown) => (typeof value === "number" ? value : null)

const textOf = (text: unknown) => (isObject(text) && isObject(text["format"]) ? text : { format: { type: "text" } })

/** Of a body already validated: each field is absent, null or of its documented type. */
export const echoOf = (body: Obj): ResponseEcho => ({
  instructions: typeof body["instructions"] === "string" ? body["instructions"] : null,
  max_output_tokens: numberOrNull(body["max_output_tokens"]),
  temperature: numberOrNull(body["temperature"]),
  top_p: numberOrNull(body["top_p"]),
  tools: Array.isArray(body["tools"]) ? body["tools"] : [],
  tool_choice: body["tool_choice"] ?? "auto",
  parallel_tool_calls: typeof body["parallel_tool_calls"] === "boolean" ? body["parallel_tool_calls"] : true,
  text: textOf(body["text"]),
  metadata: isObject(body["metadata"]) ? (body["metadata"] as Record<string, string>) : {},
})
