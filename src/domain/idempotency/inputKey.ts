import { createHash } from "node:crypto"

/** What decides a submitted input's batches: the same values make the same keys, so a second run finds the first's batches. */
export interface InputKeyParts {
  /** Hex SHA-256 of the input file's bytes (or of the requests as JSON). */
  readonly inputSha256: string
  readonly model: string | undefined
  readonly metadata: Record<string, string> | undefined
  /** Absent leaves the key as it was before priorities existed. */
  readonly priority?: string | undefined
  /** This batch's 0-based place among the `parts` batches the input was split into. */
  readonly part: number
  readonly parts: number
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/**
 * The Idempotency-Key of one batch of an input. Everything that changes the create's body is in it
 * (metadata in its given order, as the body sends it), so a key never meets a second body, which the
 * server would refuse with 422; the version prefix keeps that true if the derivation ever changes.
 */
export const inputKey = ({ inputSha256, model, metadata, priority, part, parts }: InputKeyParts): string =>
  `sluice-input-v1-${sha256(
    JSON.stringify([inputSha256, model ?? null, metadata === undefined ? null : Object.entries(metadata), part, parts, ...(priority === undefined ? [] : [priority])]),
  )}`
