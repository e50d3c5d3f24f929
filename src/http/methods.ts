import { HttpApi } from "@effect/platform"
import { SluiceApi } from "./api.js"
import { routePattern } from "./routeTemplate.js"

interface Route {
  readonly pattern: RegExp
  readonly methods: Set<string>
}

/** The pages served beside the API, all GET: exactly these paths, and the console's below its own. */
const pages = ["/", "/docs", "/openapi.json", "/asyncapi.json", "/console"]
const pagesBelow = ["/console"]

/** Every path the API serves, with the methods it takes there, read from the API's own declaration. */
const routes = (() => {
  const byPath = new Map<string, Route>()
  const add = (path: string, method: string, pattern = routePattern(path)) => {
    const route = byPath.get(path) ?? { pattern, methods: new Set<string>() }
    route.methods.add(method)
    // A GET route answers HEAD as well.
    if (method === "GET") route.methods.add("HEAD")
    byPath.set(path, route)
  }
  HttpApi.reflect(SluiceApi, { onGroup: () => undefined, onEndpoint: ({ endpoint }) => add(endpoint.path, endpoint.method) })
  for (const page of pages) add(page, "GET")
  for (const page of pagesBelow) add(`${page}/*`, "GET", new RegExp(`^${page}/`))
  return [...byPath.values()]
})()

/** The methods a known path takes (for `Allow`), or undefined for a path the API does not serve. */
export const allowedMethods = (pathname: string): ReadonlyArray<string> | undefined => {
  const methods = new Set<string>()
  for (const route of routes) if (route.pattern.test(pathname)) for (const m of route.methods) methods.add(m)
  return methods.size === 0 ? undefined : [...methods].sort()
}
