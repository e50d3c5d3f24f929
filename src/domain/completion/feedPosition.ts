/**
 * A completion event's place in the log: the message that settled its row (`seq`) and the event's
 * place in that message (a lane window holds many row events, any other message one). The log gives
 * every instance, and every rebuild of a read model, the same places.
 */
export interface FeedPosition {
  readonly seq: number
  readonly idx: number
}

const SEQ_DIGITS = 14
const IDX_DIGITS = 6
const shape = new RegExp(`^cmpl_([0-9a-f]{${SEQ_DIGITS}})([0-9a-f]{${IDX_DIGITS}})$`)

/** Feed order: the log's, then the place within one message. */
export const comparePositions = (a: FeedPosition, b: FeedPosition): number => a.seq - b.seq || a.idx - b.idx

/** `cmpl_` and the position in fixed-width hex, so that completion ids sort as the feed does. */
export const formatCompletionId = (at: FeedPosition): string =>
  `cmpl_${at.seq.toString(16).padStart(SEQ_DIGITS, "0")}${at.idx.toString(16).padStart(IDX_DIGITS, "0")}`

/** The position a completion id names, or undefined for text that is not one. */
export const parseCompletionId = (text: string): FeedPosition | undefined => {
  const match = shape.exec(text)
  if (match === null) return undefined
  const seq = Number.parseInt(match[1]!, 16)
  return Number.isSafeInteger(seq) ? { seq, idx: Number.parseInt(match[2]!, 16) } : undefined
}
