/*
 * Event schema versions. Every stored event type has one, written as `v` once it is past 1 (a payload
 * without `v` is version 1, as every event written before versions existed). Readers upcast what they
 * read to the current version, step by step, before decoding it, so a log written by any release
 * replays through today's code. A new version adds its upcaster here; none is ever removed.
 */

type Payload = Record<string, unknown>
type Upcaster = (event: Payload) => Payload

/** The version each type is written at today; types not listed are at 1. */
export const currentVersions: Readonly<Record<string, number>> = {
  // 2: `reason` is always there ("deleted" or "retention"); version 1 had none and meant "deleted".
  batch_deleted: 2,
}

/** `upcasters[type][n]` takes version n of the type to version n + 1. */
const upcasters: Readonly<Record<string, Readonly<Record<number, Upcaster>>>> = {
  batch_deleted: {
    1: (event) => ({ ...event, reason: event.reason ?? "deleted", v: 2 }),
  },
}

export const currentVersion = (type: string): number => currentVersions[type] ?? 1

export const versionOf = (event: Payload): number => (typeof event.v === "number" ? event.v : 1)

/** An event as read from the log, raised to its type's current version; anything else as it is. */
export const upcast = (payload: unknown): unknown => {
  if (typeof payload !== "object" || payload === null || typeof (payload as Payload).type !== "string") return payload
  let event = payload as Payload
  const type = event.type as string
  const target = currentVersion(type)
  for (let v = versionOf(event); v < target; v++) {
    const step = upcasters[type]?.[v]
    if (step === undefined) throw new Error(`no upcaster for ${type} version ${v}`)
    event = step(event)
  }
  return event
}
