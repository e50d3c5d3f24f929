import { HttpApi } from "@effect/platform"
import { SluiceApi } from "./api.js"

interface Route {
  readonly pattern: RegExp
  readonly methods: Set<string>
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** `/v1/batches/:batch_id` → a pattern matching its paths; `:name` segments match one segment each. */
const patternOf = (path: string) =>
  new RegExp(`^${path.split("/").map((segment) => (segment.startsWith(":") ? "[^/]+" : escape(segment))).join("/")}$`)

/** Every path the API serves, with the methods it takes there, read from the API's own declaration. */
const routes = (() => {
  const byPath = new Map<string, Route>()
  const add = (path: string, method: string) => {
    const route = byPath.get(path) ?? { pattern: patternOf(path), methods: new Set<string>() }
    route.methods.add(method)
    // A GET route answers HEAD as well.
    if (method === "GET") route.methods.add("HEAD")
    byPath.set(path, route)
  }
  HttpApi.reflect(SluiceApi, { onGroup: () => undefined, onEndpoint: ({ endpoint }) => add(endpoint.path, endpoint.method) })
  add("/openapi.json", "GET")
  return [...byPath.values()]
})()

/** The methods a known path takes (for `Allow`), or undefined for a path the API does not serve. */
export const allowedMethods = (pathname: string): ReadonlyArray<string> | undefined => {
  const methods = new Set<string>()
  for (const route of routes) if (route.pattern.test(pathname)) for (const m of route.methods) methods.add(m)
  return methods.size === 0 ? undefined : [...methods].sort()
}
