import { Schema } from "effect"
import { upcast } from "../versions/upcast.js"
import { BatchEvent, RowCancelled, RowCompleted, RowFailed, RowRetrying, RowStarted, type RowEvent } from "./events.js"

/**
 * A model's row events for one batch, written together by the model's lease owner on the batch's lane
 * for that model (`batch.<id>.lane.<token>`). The owner is the lane's only writer: each window is
 * appended on the lane's previous sequence, so the log refuses a window from an owner that another has
 * replaced. `lease` is the fencing revision the owner held; a new owner's first window on a lane is its
 * claim and may settle rows a previous owner left running.
 */
export const LaneWindow = Schema.Struct({
  type: Schema.Literal("lane_window"),
  batch_id: Schema.String,
  model: Schema.String,
  owner: Schema.String,
  lease: Schema.Number,
  events: Schema.Array(Schema.Union(RowStarted, RowRetrying, RowCompleted, RowFailed, RowCancelled)),
})
export type LaneWindow = typeof LaneWindow.Type

/** What a batch's subjects carry: its events one per message, or a lane's row events in windows. */
export type BatchMessage = BatchEvent | LaneWindow

export const isLaneWindow = (message: BatchMessage): message is LaneWindow => message.type === "lane_window"

/** The events a message holds, in order. */
export const eventsOf = (message: BatchMessage): ReadonlyArray<BatchEvent> =>
  isLaneWindow(message) ? (message.events as ReadonlyArray<RowEvent>) : [message]

const decodeEvent = Schema.decodeUnknownSync(BatchEvent)
const decodeWindow = Schema.decodeUnknownSync(LaneWindow)
const text = new TextDecoder()

/**
 * A batch subject's stored payload as the current version's message (older versions upcast first), or
 * undefined for one that is not Sluice's (a foreign publisher on our subjects). Every reader of batch
 * subjects decodes through here.
 */
export const decodeBatchMessage = (data: Uint8Array): BatchMessage | undefined => {
  try {
    const payload = upcast(JSON.parse(text.decode(data))) as { type?: unknown }
    return payload.type === "lane_window" ? decodeWindow(payload) : decodeEvent(payload)
  } catch {
    return undefined
  }
}
