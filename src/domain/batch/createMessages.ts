// Every message the create validator can produce, in one place so HTTP tests can assert them verbatim.

export const rowLabel = (index: number, customId?: string): string =>
  customId === undefined ? `requests[${index}]` : `requests[${index}] (custom_id '${customId}')`

export const rowMessage = (index: number, customId: string | undefined, detail: string): string =>
  `${rowLabel(index, customId)}: ${detail}`

/** A message naming a row by its own label (`requests[3]`, `line 4`), with its custom_id when it has a usable one. */
export const labelledMessage = (label: string, customId: string | undefined, detail: string): string =>
  customId === undefined ? `${label}: ${detail}` : `${label} (custom_id '${customId}'): ${detail}`

export const CreateMessage = {
  notABatch: "The request body is not a batch: expected a JSON object with a 'requests' array",
  noRequests: "The batch holds no requests: 'requests' must hold at least one",
  tooManyRequests: (count: number, limit: number) =>
    `The batch holds ${count} requests, more than the limit of ${limit}; split it into several batches`,

  metadataNotAnObject: "'metadata' must be an object of string key-value pairs",
  metadataTooManyPairs: (count: number, limit: number) =>
    `'metadata' has ${count} pairs, more than the limit of ${limit}`,
  metadataKeyTooLong: (key: string, limit: number) =>
    `'metadata' key '${key}' is ${key.length} characters, more than the limit of ${limit}`,
  metadataValueNotAString: (key: string) => `'metadata' value for key '${key}' must be a string`,
  metadataValueTooLong: (key: string, length: number, limit: number) =>
    `'metadata' value for key '${key}' is ${length} characters, more than the limit of ${limit}`,

  requestNotAnObject: "must be an object with 'custom_id' and 'body'",
  customIdMissing: "'custom_id' is required",
  customIdNotAString: "'custom_id' must be a string",
  customIdEmpty: "'custom_id' must not be empty",
  customIdTooLong: (length: number, limit: number) =>
    `'custom_id' is ${length} characters, more than the limit of ${limit}`,
  customIdRepeated: (firstIndex: number) =>
    `'custom_id' repeats the one of requests[${firstIndex}]; custom_ids must be unique within the batch`,
  /** The same, of a row named otherwise (a file's `line 3`). */
  customIdRepeats: (first: string) => `'custom_id' repeats the one of ${first}; custom_ids must be unique within the batch`,
  methodNotPost: "'method' must be 'POST', the only method a batch accepts",
  urlUnknown: "'url' must be one of '/v1/chat/completions', '/v1/embeddings', '/v1/responses', the endpoints a batch can call",
  urlNotTheBatchEndpoint: (url: string, endpoint: string) =>
    `'url' is '${url}' but this batch calls '${endpoint}': every request of a batch calls the same endpoint`,
  bodyNotAnObject: "'body' must be a chat-completion request object",
  embeddingsBodyNotAnObject: "'body' must be an embeddings request object",
  responsesBodyNotAnObject: "'body' must be a Responses API request object",
  responsesRowMessages: "'body.input' is required: a /v1/responses request carries Responses API input, not chat messages",
  /** A request of its own (`POST /v1/chat/completions`, `/v1/responses`) naming a model that serves only other endpoints. */
  modelServesOthers: (model: string, endpoint: string, served: ReadonlyArray<string>) =>
    `Model '${model}' does not serve ${endpoint}; it serves ${served.join(", ")}`,
  modelDoesNotServe: (model: string, endpoint: string, served: ReadonlyArray<string>) =>
    served.length === 0
      ? `Model '${model}' does not serve ${endpoint}`
      : `Model '${model}' does not serve ${endpoint}, the endpoint of this batch; it serves ${served.join(", ")}`,
  modelNotAString: (got: string) => `body.model must be a string naming a model, got ${got}`,
  autoModel: (model: string) => `Model '${model}' is an auto model, which cannot be used in a batch; name a specific model`,
  modelNotFound: (model: string) => `Model '${model}' not found`,
} as const
