import { asyncApiDocument } from "./asyncApiDocument.js"

/** The version the event contract is published under: the API's (see src/http/api.ts). */
export const CONTRACT_VERSION = "0.1.0"

/** The document as served at /asyncapi.json and committed as docs/asyncapi.json. */
export const asyncApiJson = (): string => `${JSON.stringify(asyncApiDocument(CONTRACT_VERSION), null, 2)}\n`
