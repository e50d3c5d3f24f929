import { createHash } from "node:crypto"

/** An idempotency record's hash of its parts (the account and key; a create's body), each ended by a newline. */
export const idempotencyDigest = (...parts: ReadonlyArray<string>) => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part).update("\n")
  return hash.digest("hex")
}
