/**
 * Where a watcher of a batch's events is: past the log message `seq`, and reading again from `from`.
 * `from` is `seq + 1` unless a multi-part message was still being assembled when `seq` was delivered:
 * then it is that message's first part, and the messages up to `seq` that come again are skipped.
 */
export interface EventCursor {
  readonly seq: number
  readonly from: number
}

export const fromTheStart: EventCursor = { seq: 0, from: 1 }

export const cursorAfter = (message: { readonly seq: number; readonly resumeSeq?: number }): EventCursor => ({
  seq: message.seq,
  from: message.resumeSeq ?? message.seq + 1,
})

/** `<seq>`, or `<seq>-<from>` while a multi-part message is half read. */
export const formatCursor = (cursor: EventCursor): string =>
  cursor.from === cursor.seq + 1 ? `${cursor.seq}` : `${cursor.seq}-${cursor.from}`

const shape = /^(0|[1-9][0-9]{0,15})(?:-([1-9][0-9]{0,15}))?$/

export const parseCursor = (text: string): EventCursor | undefined => {
  const match = shape.exec(text)
  if (match === null) return undefined
  const seq = Number(match[1])
  if (!Number.isSafeInteger(seq + 1)) return undefined
  if (match[2] === undefined) return { seq, from: seq + 1 }
  const from = Number(match[2])
  return from <= seq ? { seq, from } : undefined
}
