import type { LaneWindow } from "../domain/batch/laneWindow.js"
import type { LogMessage } from "../eventlog/EventLog.js"

/** More than the projections lag behind the writers by at full speed; past it, what is held is dropped. */
const MOST_HELD = 4_096

/**
 * The lane windows this process's writers appended, as they encoded them, until the projections reach
 * them: a window applied from here is not parsed and decoded from its bytes again (that was a twentieth
 * of the dispatch thread's work a row). A seq names one message of the log; its subject is checked all
 * the same. Windows other instances wrote, and every window read again after a restart or in a rebuild,
 * are decoded from the log as before: the bytes stay the record, these are the values they were made of.
 */
export const makeWrittenWindows = () => {
  const held = new Map<number, { readonly subject: string; readonly window: LaneWindow }>()
  let passed = 0
  return {
    wrote: (seq: number, subject: string, window: LaneWindow) => {
      // Applied already: its append's answer came after the projections had read it.
      if (seq <= passed) return
      if (held.size >= MOST_HELD) held.clear()
      held.set(seq, { subject, window })
    },
    /** The window `message` holds, if this process wrote it; the ones held from before it are dropped. */
    take: (message: LogMessage): LaneWindow | undefined => {
      passed = Math.max(passed, message.seq)
      if (held.size === 0) return undefined
      const found = held.get(message.seq)
      for (const seq of held.keys()) {
        if (seq > message.seq) break
        held.delete(seq)
      }
      return found !== undefined && found.subject === message.subject ? found.window : undefined
    },
    /**
     * The log no longer holds what was applied (the projections are rebuilt from it): a seq this process
     * was answered for may hold another message now, so nothing held is used.
     */
    forget: () => held.clear(),
  }
}
export type WrittenWindows = ReturnType<typeof makeWrittenWindows>
