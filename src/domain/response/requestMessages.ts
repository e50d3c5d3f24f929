/*
 * Every message `POST /v1/responses` refuses a body with: a Responses-shaped batch row's, with fields
 * named from the request itself (`input[2].role`, not `body.input[2].role`), as `/v1/chat/completions`
 * names a chat row's fields.
 */
export const ResponseRequestMessage = {
  notAnObject: "The request body must be a Responses API request object",
  messagesAndInput: "The request must include either messages or Responses API input, not both",
  inputNotTextOrList: "'input' must be a non-empty string or a non-empty list of input items",
  inputItemNotAnObject: (k: number) => `'input[${k}]' must be an input item object`,
  inputItemType: (k: number, type: string) =>
    `'input[${k}]' is a '${type}' item, which a response cannot carry; use message, function_call or function_call_output items`,
  inputRole: (k: number) => `'input[${k}].role' must be one of user, assistant, system, developer`,
  inputContent: (k: number) => `'input[${k}].content' must be a string or a list of content parts`,
  inputPart: (k: number, p: number) => `'input[${k}].content[${p}]' must be an input_text, output_text or input_image part`,
  functionCall: (k: number) => `'input[${k}]' function_call needs string 'call_id', 'name' and 'arguments'`,
  functionCallOutput: (k: number) => `'input[${k}]' function_call_output needs string 'call_id' and 'output'`,
  instructions: "'instructions' must be a string",
  stateful: (field: string) => `${field} is not supported: Sluice keeps no conversation state, so every response stands alone`,
  tool: (t: number) => `'tools[${t}]' must be a function tool with a string 'name'; hosted tools cannot run here`,
  textFormat: "'text.format' must be a text, json_object or json_schema format",
  stream:
    "stream is not supported on POST /v1/responses: send the request without stream to get the whole response, " +
    "or stream a chat completion from POST /v1/chat/completions",
  modelNotAString: (got: string) => `model must be a string naming a model, got ${got}`,
  modelNotFound: (model: string) => `Model '${model}' not found`,
} as const
