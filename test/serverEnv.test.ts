import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { serverEnv } from "../src/config/serverEnv.js"

const text = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), "utf8")

describe("the server's environment", () => {
  const settings = Object.entries(serverEnv)

  it("is what npm start sets", () => {
    const start = (JSON.parse(text("package.json")) as { scripts: Record<string, string> }).scripts.start!
    expect(settings.length).toBeGreaterThan(0)
    for (const [name, value] of settings) expect(start).toContain(`${name}=${value} `)
  })

  it("is what the Docker image sets", () => {
    const env = text("Dockerfile")
      .split("\n")
      .filter((line) => line.startsWith("ENV "))
      .join(" ")
    for (const [name, value] of settings) expect(env).toContain(`${name}=${value}`)
  })
})
