import { describe, expect, it } from "vitest"
import { SluiceApi } from "../../src/http/api.js"
import { routeTemplates } from "../../src/http/routeTemplate.js"

describe("route templates for the request metrics", () => {
  const routeOf = routeTemplates(SluiceApi, ["/docs", "/console"])

  it.each([
    ["POST", "/v1/batches", "/v1/batches"],
    ["GET", "/v1/batches", "/v1/batches"],
    ["GET", "/v1/batches/batch_1", "/v1/batches/:batch_id"],
    ["GET", "/v1/batches/batch_1/results", "/v1/batches/:batch_id/results"],
    ["GET", "/v1/batches/batch_1/results.jsonl", "/v1/batches/:batch_id/results.jsonl"],
    ["GET", "/v1/batches/batch_1/results/batch_req_3", "/v1/batches/:batch_id/results/:result_id"],
    ["POST", "/v1/batches/batch_1/cancel", "/v1/batches/:batch_id/cancel"],
    ["DELETE", "/v1/batches/batch_1", "/v1/batches/:batch_id"],
    ["POST", "/admin/v1/keys/key_1/revoke", "/admin/v1/keys/:id/revoke"],
    ["GET", "/console/console.js", "/console"],
    ["GET", "/docs", "/docs"],
  ])("%s %s is %s", (method, path, route) => {
    expect(routeOf(method, path)).toBe(route)
  })

  it("names no raw path: anything unknown is unmatched", () => {
    expect(routeOf("GET", "/v1/nothing/here")).toBe("unmatched")
    expect(routeOf("PUT", "/v1/batches")).toBe("unmatched")
  })
})
