import { Context, Layer } from "effect"

/**
 * Whether a batch row may start now, on behalf of its account: the owner's key and account still
 * valid, daily quota left, batch access, and a free concurrent-request slot. A row that may not
 * start stays queued; its model actor passes over to other accounts and is woken on a change.
 */
export interface AdmissionShape {
  readonly mayStart: (accountId: string, batchId: string) => boolean
  /** A batch row of the account starts (it holds one of the account's concurrent-request slots) / ends. */
  readonly acquire: (accountId: string) => void
  readonly release: (accountId: string) => void
  /** Calls `listener` whenever a row that could not start may be able to now. */
  readonly onChange: (listener: () => void) => void
}

export class Admission extends Context.Tag("Actors/Admission")<Admission, AdmissionShape>() {
  /** Every row may start: no owner checks, quota or account slots. */
  static readonly open = Layer.succeed(Admission, {
    mayStart: () => true,
    acquire: () => undefined,
    release: () => undefined,
    onChange: () => undefined,
  })
}
