import { randomUUID } from "node:crypto"
import { chatRow, client } from "./client.js"
import { type Instance, MODELS, withTimeout } from "./partitionedDeployment.js"
import { BOOTSTRAP_KEY } from "./sluice.js"

export interface CreatedBatch {
  readonly id: string
  readonly label: string
  readonly through: string
  readonly total: number
  /** Rows per model. */
  readonly rows: ReadonlyMap<string, number>
  readonly createdAt: number
}

export interface BatchLoad {
  /**
   * Creates a batch of `rows` rows over every model in turn through `through`, retrying with one
   * Idempotency-Key until it is answered 200 (through an instance cut from NATS, once it is healed).
   */
  create(label: string, through: Instance, rows?: number): Promise<CreatedBatch>
  /** Every create started so far, once answered. */
  created(): Promise<ReadonlyArray<CreatedBatch>>
  /** Refused or timed-out attempts before the answer, per label. */
  readonly retries: Map<string, number>
}

const GIVE_UP_MS = 120_000

export const rowContent = (label: string, row: number) => `${label} row ${row}`

export const batchLoad = (): BatchLoad => {
  const pending: Array<Promise<CreatedBatch>> = []
  const retries = new Map<string, number>()
  const create = (label: string, through: Instance, total = 100): Promise<CreatedBatch> => {
    const requests = Array.from({ length: total }, (_, i) => chatRow(`${label}-${i}`, rowContent(label, i), MODELS[i % MODELS.length]))
    const rows = new Map(MODELS.map((m, k) => [m as string, requests.filter((_, i) => i % MODELS.length === k).length]))
    const key = randomUUID()
    const giveUpAt = Date.now() + GIVE_UP_MS
    const attempt = async (): Promise<CreatedBatch> => {
      for (;;) {
        const answer = await withTimeout(
          `create ${label} through ${through.name}`,
          client(through.url).call("POST", "/v1/batches", { requests }, { authorization: `Bearer ${BOOTSTRAP_KEY}`, "idempotency-key": key }),
          10_000,
        ).catch((error: unknown) => ({ status: 0, text: String(error), body: undefined }))
        if (answer.status === 200) return { id: answer.body.id, label, through: through.name, total, rows, createdAt: Date.now() }
        retries.set(label, (retries.get(label) ?? 0) + 1)
        if (Date.now() > giveUpAt) throw new Error(`create ${label} through ${through.name} not answered 200 in ${GIVE_UP_MS} ms: ${answer.status} ${answer.text.slice(0, 500)}`)
        await new Promise((r) => setTimeout(r, 500))
      }
    }
    const created = attempt()
    // Awaited through created(); a create fired during a cut must not count as unhandled before then.
    created.catch(() => undefined)
    pending.push(created)
    return created
  }
  return { create, created: () => Promise.all(pending), retries }
}
