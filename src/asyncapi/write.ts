import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { asyncApiJson } from "./asyncApiJson.js"

/** `npm run asyncapi`: writes the document kept in the repository, docs/asyncapi.json. */
const path = fileURLToPath(new URL("../../docs/asyncapi.json", import.meta.url))
writeFileSync(path, asyncApiJson())
console.log(`wrote ${path}`)
