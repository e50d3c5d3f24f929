import { Either } from "effect"
import { type OwnerAccount, type OwnerError, type OwnerKey, authorizedAccount } from "./ownerVerdict.js"

export interface OwnedBatch {
  readonly id: string
  /** The key the batch was created with; undefined when it is gone. */
  readonly key: OwnerKey | undefined
}

/** The account's open batches whose owner may no longer run them at `now`, each with the reason. */
export const batchesToFail = (
  account: OwnerAccount | undefined,
  batches: ReadonlyArray<OwnedBatch>,
  now: number,
): ReadonlyArray<{ readonly id: string; readonly error: OwnerError }> => {
  const failing: Array<{ readonly id: string; readonly error: OwnerError }> = []
  for (const batch of batches) {
    const authorized = authorizedAccount(account, batch.key, now)
    if (Either.isLeft(authorized)) failing.push({ id: batch.id, error: authorized.left })
  }
  return failing
}
