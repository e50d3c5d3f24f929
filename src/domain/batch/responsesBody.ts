import type { JsonObject as Obj } from "../json.js"
import { BodyRejection, sentField as sentFieldAfter, toChatForm } from "../response/chatForm.js"

/*
 * Responses API request bodies in a batch, turned into the chat-completions bodies that are stored and
 * sent upstream. A body is Responses-shaped when it carries `input`; a chat body passes through as is.
 */

export { BodyRejection }

export const ResponsesMessage = {
  background: "background is not supported in batch request bodies",
  noMessagesNorInput: "body must include a non-empty messages list or Responses API input",
  messagesAndInput: "body must include either messages or Responses API input, not both",
  inputNotTextOrList: "'body.input' must be a non-empty string or a non-empty list of input items",
  inputItemNotAnObject: (k: number) => `'body.input[${k}]' must be an input item object`,
  inputItemType: (k: number, type: string) =>
    `'body.input[${k}]' is a '${type}' item, which a batch row cannot carry; use message, function_call or function_call_output items`,
  inputRole: (k: number) => `'body.input[${k}].role' must be one of user, assistant, system, developer`,
  inputContent: (k: number) => `'body.input[${k}].content' must be a string or a list of content parts`,
  inputPart: (k: number, p: number) =>
    `'body.input[${k}].content[${p}]' must be an input_text, output_text or input_image part`,
  functionCall: (k: number) => `'body.input[${k}]' function_call needs string 'call_id', 'name' and 'arguments'`,
  functionCallOutput: (k: number) => `'body.input[${k}]' function_call_output needs string 'call_id' and 'output'`,
  instructions: "'body.instructions' must be a string",
  stateful: (field: string) => `${field} is not supported in batch request bodies: every row stands alone`,
  tool: (t: number) => `'body.tools[${t}]' must be a function tool with a string 'name'; hosted tools cannot run in a batch`,
  textFormat: "'body.text.format' must be a text, json_object or json_schema format",
} as const

/**
 * A body without `input` is returned as is (the same object), so chat rows cost nothing here.
 * A Responses body becomes a new chat body; its other fields (temperature, top_p, seed, ...) carry over.
 */
export const normalizeRowBody = (body: Obj): Obj | BodyRejection => {
  if (body["background"] === true) return new BodyRejection(ResponsesMessage.background, ".background")
  if (body["input"] === undefined) {
    if (body["messages"] === undefined) return new BodyRejection(ResponsesMessage.noMessagesNorInput, "")
    return body
  }
  return toChatForm(body, ResponsesMessage)
}

/** Where a field of a row's converted chat body came from in the body sent, named from the row (`body.…`). */
export const sentField = (path: string, sent: Obj) => sentFieldAfter(path, sent, "body.")
