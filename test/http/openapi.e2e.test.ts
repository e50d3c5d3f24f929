import SwaggerParser from "@apidevtools/swagger-parser"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessSluice, startInProcessSluice } from "../support/inProcessSluice.js"

/** The served document, as a client generator would take it. */
describe("the OpenAPI document", () => {
  let sluice: InProcessSluice
  let spec: any
  const dir = mkdtempSync(join(tmpdir(), "sluice-openapi-"))

  beforeAll(async () => {
    sluice = await startInProcessSluice({ models: [{ id: "glm-5.3-flash", upstream_url: "http://127.0.0.1:9/v1" }] })
    spec = await (await fetch(`${sluice.url}/openapi.json`)).json()
  })
  afterAll(async () => {
    await sluice?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("validates with swagger-parser: every reference resolves", async () => {
    await expect(SwaggerParser.validate(structuredClone(spec))).resolves.toBeDefined()
    expect(JSON.stringify(spec)).not.toContain("#/$defs/")
  })

  it("names its server and a bearer scheme for each kind of token, applied to the endpoints that need one", () => {
    expect(spec.servers).toEqual([{ url: "/", description: "This Sluice instance" }])
    expect(spec.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" })
    expect(spec.components.securitySchemes.adminToken).toMatchObject({ type: "http", scheme: "bearer" })
    expect(spec.paths["/v1/batches"].post.security).toEqual([{ apiKey: [] }])
    expect(spec.paths["/v1/models"].get.security).toEqual([{ apiKey: [] }])
    expect(spec.paths["/v1/chat/completions"].post.security).toEqual([{ apiKey: [] }])
    expect(spec.paths["/admin/v1/accounts"].post.security).toEqual([{ adminToken: [] }])
    expect(spec.paths["/admin/v1/models"].get.security).toEqual([{ adminToken: [] }])
    expect(spec.paths["/healthz"].get.security).toEqual([])
    expect(spec.paths["/readyz"].get.security).toEqual([])
    expect(spec.paths["/metrics"].get.security).toEqual([{}, { metricsToken: [] }])
  })

  it("generates TypeScript types with openapi-typescript that compile", async () => {
    const types = astToString(await openapiTS(structuredClone(spec)))
    const file = join(dir, "sluice-api.ts")
    // A use of the generated types, so that they are not only declared but resolved.
    writeFileSync(
      file,
      `${types}\nexport type Created = paths["/v1/batches"]["post"]["responses"]["200"]["content"]["application/json"]\n` +
        `export const status: Created["status"] = "validating"\n`,
    )
    const program = ts.createProgram([file], { strict: true, noEmit: true, types: [], target: ts.ScriptTarget.ES2022 })
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
    expect(problems).toEqual([])
    expect(types).toContain('"/v1/batches/{batch_id}/results"')
  })

  it("/docs serves the interactive reference from the same document, with nothing from another host", async () => {
    const response = await fetch(`${sluice.url}/docs`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/text\/html/)
    const html = await response.text()
    expect(html).toContain("api-reference")
    expect(html).toContain('"/v1/batches"')
    expect(html).not.toMatch(/<script[^>]+src="https?:/)
  })
})
