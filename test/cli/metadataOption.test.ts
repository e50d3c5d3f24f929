import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { parseMetadata } from "../../src/cli/metadataOption.js"

describe("--metadata values", () => {
  it("a JSON object of strings reads as itself, and so do its pairs given as key=value", () => {
    // A value that starts like JSON is read as JSON, so a key=value pair's key cannot.
    const key = fc.string({ minLength: 1 }).filter((k) => !k.includes("=") && !/^\s*[{[]/.test(k))
    fc.assert(
      fc.property(fc.dictionary(key, fc.string(), { minKeys: 1 }), (metadata) => {
        expect(parseMetadata([JSON.stringify(metadata)])).toEqual(Either.right(metadata))
        const pairs = Object.entries(metadata).map(([k, v]) => `${k}=${v}`)
        expect(parseMetadata(pairs)).toEqual(Either.right(metadata))
      }),
    )
  })

  it("forms mix, the later value of a key winning; none given is no metadata", () => {
    expect(parseMetadata(['{"a":"1","b":"2"}', "b=3", "c=x=y"])).toEqual(Either.right({ a: "1", b: "3", c: "x=y" }))
    expect(parseMetadata([])).toEqual(Either.right(undefined))
  })

  it("names the accepted forms when a value is neither, and refuses values that are not strings", () => {
    expect(parseMetadata(["project"])).toEqual(
      Either.left(`--metadata 'project' is neither JSON nor key=value; give a JSON object of strings ('{"project":"x"}') or key=value, repeatable`),
    )
    expect(parseMetadata(["=x"])).toEqual(Either.left(expect.stringContaining("neither JSON nor key=value")))
    expect(parseMetadata(['["a"]'])).toEqual(Either.left(expect.stringContaining("is not a JSON object")))
    expect(parseMetadata(['{"run":1}'])).toEqual(Either.left(`--metadata: the value of "run" is not a string; metadata values are strings`))
  })
})
