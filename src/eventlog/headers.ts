import { CHUNK_HEADER } from "./chunking.js"
import { HASH_HEADER, PREV_HASH_HEADER } from "./eventHeaders.js"

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
      "of a chunked message, `<stream_id>:<event_type>` for a stream's once-only events, `<file_id>:part:<n>` for a file's parts " +
      "and `<file_id>:file_created`; absent on `batch_purged`, `stream_purged`, `file_deleted` and `file_purged`.",
  },
  {
    name: CHUNK_HEADER,
    always: false,
    description:
      "`<chunk_id> <index> <count>`: this message is part `index` (0-based) of `count` consecutive parts on the same subject; " +
      "join the parts' data in order to get the event. Absent on a message stored in one part.",
  },
  ...(
    [
      ["ce-specversion", "CloudEvents spec version, `1.0` (the CloudEvents NATS binding, binary mode: the payload is the event's data)"],
      ["ce-id", "The event's id: its `Nats-Msg-Id` where it has one, else a random UUID"],
      [
        "ce-type",
        "`sluice.<aggregate>.<event_type>`, the aggregate being the subject's first token: e.g. `sluice.batch.row_completed`, " +
          "`sluice.response.batch_created` (a response runs as a one-row batch, with the batch events), `sluice.stream.stream_archived`, " +
          "`sluice.file.file_created`, `sluice.account.key_created`; a file's raw part is `sluice.file.part`",
      ],
      ["ce-source", "`/sluice`"],
      ["ce-subject", "The aggregate's id: the subject's second token (the batch, response, stream, file or account id, the idempotency digest)"],
      ["ce-time", "When the log was asked to store the message (RFC 3339); the event's own time is in its payload"],
      ["ce-datacontenttype", "`application/json`; `application/octet-stream` on a file's raw part"],
    ] as const
  ).map(([name, description]) => ({ name, description, always: true })),
  {
    name: HASH_HEADER,
    always: false,
    description:
      "On every message of a `batch.`, `response.`, `stream.` or `file.` subject (a file's raw parts included): its link in that subject's hash chain, the hex SHA-256 of " +
      "`<previous link>\\n<subject>\\n` followed by the message's data (all its parts joined); the previous link is \"\" for " +
      "the subject's first message. Every part of a chunked message carries it.",
  },
  {
    name: PREV_HASH_HEADER,
    always: false,
    description:
      "On every message of a `batch.`, `response.`, `stream.` or `file.` subject but its first: the previous message's `Sluice-Sha256`. " +
      "A missing, altered or inserted message breaks the chain at the next one; `batch_purged`, `stream_purged` and `file_purged` keep each " +
      "purged subject's last link.",
  },
]
