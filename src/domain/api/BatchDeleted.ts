import { Schema } from "effect"

export const BatchDeleted = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("batch.deleted"),
  deleted: Schema.Literal(true),
}).annotations({ identifier: "BatchDeleted" })

export interface BatchDeleted extends Schema.Schema.Type<typeof BatchDeleted> {}
