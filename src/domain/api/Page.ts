import { Schema } from "effect"
import { BatchObject } from "./BatchObject.js"
import { ResultLine } from "./ResultLine.js"

export const Page = <A, I, R>(item: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    object: Schema.Literal("list"),
    data: Schema.Array(item),
    has_more: Schema.Boolean,
    first_id: Schema.NullOr(Schema.String),
    last_id: Schema.NullOr(Schema.String),
  })

export const ResultsPage = Page(ResultLine).annotations({ identifier: "ResultsPage" })

export interface ResultsPage extends Schema.Schema.Type<typeof ResultsPage> {}

export const BatchList = Page(BatchObject).annotations({ identifier: "BatchList" })

export interface BatchList extends Schema.Schema.Type<typeof BatchList> {}
