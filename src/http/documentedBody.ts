import { OpenApi } from "@effect/platform"
import { JSONSchema, type Schema } from "effect"

/** The schemas the documented request bodies refer to, added to the document's components. */
export const bodyDefinitions: Record<string, JSONSchema.JsonSchema7> = {}

/** Bodies are read and validated by the handlers (size limit, seed messages); this only documents them. */
export const documentedBody = (schema: Schema.Schema.Any, required = true) =>
  OpenApi.annotations({
    override: {
      requestBody: {
        required,
        content: {
          "application/json": {
            schema: JSONSchema.fromAST(schema.ast, {
              definitions: bodyDefinitions,
              definitionPath: "#/components/schemas/",
              target: "openApi3.1",
            }),
          },
        },
      },
    },
  })
