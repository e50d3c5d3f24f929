import { describe, expect, it } from "vitest"
import { purgeDueAt, type StreamStandingForRetention, streamTombstone } from "../../src/domain/stream/retention.js"

const DAY = 86_400_000
const stream = (status: StreamStandingForRetention["status"], archived_at: number | null): StreamStandingForRetention => ({
  id: "stream_r",
  account_id: "acct_r",
  status,
  created_at: 1_000,
  archived_at,
})

describe("a stream's retention", () => {
  it("runs from its archive: an open or cancelled stream is kept", () => {
    expect(purgeDueAt(stream("archived", 5_000), 7 * DAY)).toBe(5_000 + 7 * DAY)
    expect(purgeDueAt(stream("open", null), 7 * DAY)).toBeUndefined()
    expect(purgeDueAt(stream("cancelled", null), 7 * DAY)).toBeUndefined()
  })

  it("leaves a tombstone with its account, times and the purged subjects' last links, and no name", () => {
    const heads = { "stream.stream_r.stream_created": "a1", "stream.stream_r.stream_archived": "b2" }
    expect(streamTombstone({ ...stream("archived", 5_000), archived_at: 5_000 }, heads, 9_000)).toEqual({
      type: "stream_purged",
      stream_id: "stream_r",
      account_id: "acct_r",
      at: 9_000,
      created_at: 1_000,
      archived_at: 5_000,
      chain_heads: heads,
    })
    expect(streamTombstone({ ...stream("archived", 5_000), archived_at: 5_000 }, {}, 9_000)).not.toHaveProperty("chain_heads")
  })
})
