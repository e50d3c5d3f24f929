import type { BatchStatus } from "../domain/api/BatchStatus.js"

/** `status IN (...)` for a set of the domain's batch statuses, which are constants: nothing to escape. */
export const statusIn = (statuses: ReadonlySet<BatchStatus>): string =>
  `status IN (${[...statuses].map((s) => `'${s}'`).join(", ")})`
