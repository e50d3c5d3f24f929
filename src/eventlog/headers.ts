import { CHUNK_HEADER } from "./chunking.js"

/** A header a stored message may carry, as the event contract (the AsyncAPI document) describes it. */
export interface DocumentedHeader {
  readonly name: string
  readonly description: string
  /** Present on every message; otherwise only on some (said in the description). */
  readonly always: boolean
}

export const MSG_ID_HEADER = "Nats-Msg-Id"

export const documentedHeaders: ReadonlyArray<DocumentedHeader> = [
  {
    name: MSG_ID_HEADER,
    always: false,
    description:
      "De-duplication key: a retried publish of the same decision is stored once. `<batch_id>:<event_type>` for lifecycle " +
      "events, `<batch_id>:bodies:<first>` / `<batch_id>:rows:<first>` for input chunks, `<msg_id>#<index>` for the parts " +
      "of a chunked message; absent on `batch_purged`.",
  },
  {
    name: CHUNK_HEADER,
    always: false,
    description:
      "`<chunk_id> <index> <count>`: this message is part `index` (0-based) of `count` consecutive parts on the same subject; " +
      "join the parts' data in order to get the event. Absent on a message stored in one part.",
  },
]
