import { Schema } from "effect"

/** OpenAI's File object, for a file uploaded with `POST /v1/files`. Times are Unix seconds. */
export const FileObject = Schema.Struct({
  id: Schema.String.annotations({ description: "`file-` and 24 letters and digits" }),
  object: Schema.Literal("file"),
  bytes: Schema.Int,
  created_at: Schema.Int,
  filename: Schema.String,
  purpose: Schema.String.annotations({ description: "`batch` for an uploaded file" }),
  status: Schema.Literal("processed"),
  expires_at: Schema.NullOr(Schema.Int).annotations({ description: "When retention deletes the file (default: 30 days after its upload)" }),
  status_details: Schema.Null,
}).annotations({ identifier: "File" })

export const FileList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(FileObject),
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String),
  has_more: Schema.Boolean,
}).annotations({ identifier: "FileList" })

export const FileDeleted = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("file"),
  deleted: Schema.Literal(true),
}).annotations({ identifier: "FileDeleted" })
