import { describe, expect, it } from "vitest"
import { ownerOf } from "../../src/actors/batchState.js"

const created = (fields: Record<string, unknown>) =>
  ({
    type: "batch_created",
    batch_id: "batch_x",
    account_id: "acct",
    key_id: "key",
    created_at: 1_700_000_000_123,
    expires_at: 1_700_086_400_123,
    completion_window: "24h",
    metadata: null,
    total: 1,
    models: ["m"],
    ...fields,
  }) as Parameters<typeof ownerOf>[0]

describe("a batch's owner, as its models' actors schedule it", () => {
  it("starts its rows by the second its expiry timer fires at (the batch object's expires_at), not the event's ms", () => {
    expect(ownerOf(created({})).startBy).toBe(1_700_086_400_000)
  })
  it("runs at standard unless its create named a priority", () => {
    expect(ownerOf(created({})).priority).toBe("standard")
    expect(ownerOf(created({ priority: "background" })).priority).toBe("background")
  })
})
