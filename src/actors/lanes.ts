import type { RowEvent } from "../domain/batch/events.js"
import type { LaneWindow } from "../domain/batch/laneWindow.js"
import { laneMsgId, laneSubject } from "../domain/batch/subjects.js"
import type { AppendInput, AppendResult } from "../eventlog/EventLog.js"
import type { LaneTip } from "./batchFromLog.js"
import { type LaneHold, LeaseLost } from "./lease/LaneHold.js"

const encoder = new TextEncoder()

/**
 * Where each lane this instance writes stands in the log: its last window's seq, the position the next
 * window must be appended on (the log refuses it otherwise), and the lease that window was written
 * under. Learnt from a batch read from the log, and moved by each window stored.
 */
export const makeLanes = () => {
  const tips = new Map<string, LaneTip>()
  const bySubject = new Map<string, string>()
  const key = (batchId: string, model: string) => `${batchId}\u0000${model}`
  // A window is appended once, as built: one given up on (its ack lost) is decided again, as a new window.
  let made = 0

  /** The batch was read from the log: its lanes stand where that read found them. */
  const learn = (batchId: string, models: ReadonlyArray<string>, found: ReadonlyMap<string, LaneTip>) => {
    for (const model of models) {
      const tip = found.get(model)
      if (tip === undefined) tips.delete(key(batchId, model))
      else tips.set(key(batchId, model), tip)
    }
  }

  /** The window of `events` on the lane, as appended and as encoded, or why this instance may not write it. */
  const window = (batchId: string, lane: LaneHold, events: ReadonlyArray<RowEvent>): { readonly input: AppendInput; readonly window: LaneWindow } | LeaseLost => {
    const tip = tips.get(key(batchId, lane.model)) ?? { seq: 0, lease: 0 }
    if (tip.lease > lane.revision) {
      return new LeaseLost({ model: lane.model, reason: `batch ${batchId}'s lane was taken under lease ${tip.lease}` })
    }
    const payload: LaneWindow = { type: "lane_window", batch_id: batchId, model: lane.model, owner: lane.owner, lease: lane.revision, events }
    const subject = laneSubject(batchId, lane.model)
    bySubject.set(subject, key(batchId, lane.model))
    const input: AppendInput = {
      subject,
      data: encoder.encode(JSON.stringify(payload)),
      // Unique to this window: another one on the same place, after this one's append was given up on but
      // while it was still on its way to the log, is refused there as out of place, not taken as this one.
      msgId: laneMsgId(batchId, lane.model, lane.revision, tip.seq, ++made),
      expectLastSubjectSeq: tip.seq,
      events: events.length,
    }
    return { input, window: payload }
  }

  /** The windows the log stored, each under the lease it was written with (`holds`, by subject). */
  const stored = (holds: ReadonlyMap<string, LaneHold>, inputs: ReadonlyArray<AppendInput>, written: ReadonlyArray<AppendResult>) => {
    inputs.forEach((input, i) => {
      const k = bySubject.get(input.subject)
      const hold = holds.get(input.subject)
      if (k !== undefined && hold !== undefined) tips.set(k, { seq: written[i]!.seq, lease: hold.revision })
    })
  }

  /** Whether the lane, as the log holds it now, is still this lease's to write. */
  const verdict = (batchId: string, lane: LaneHold): LeaseLost | undefined => {
    const tip = tips.get(key(batchId, lane.model))
    return tip !== undefined && tip.lease > lane.revision
      ? new LeaseLost({ model: lane.model, reason: `batch ${batchId}'s lane was taken under lease ${tip.lease}` })
      : undefined
  }

  const forget = (batchId: string, models: ReadonlyArray<string>) => {
    for (const model of models) {
      tips.delete(key(batchId, model))
      bySubject.delete(laneSubject(batchId, model))
    }
  }

  return { learn, window, stored, verdict, forget }
}
