import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { extname } from "node:path"
import { fileURLToPath } from "node:url"

const types: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".map": "application/json",
}

/** The console's built files: next to the server's bundle in dist/, or in dist/ when the sources run. */
const consoleDir = () => {
  for (const relative of ["./console/", "../../dist/console/"]) {
    const dir = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${dir}index.html`)) return dir
  }
  return undefined
}

const missing = HttpServerResponse.text(
  "The console has not been built: run `npm run build` (npm ci does it too), then restart Sluice.\n",
  { status: 503 },
)

/** `/console`, the web console built with the package (bin/build.mjs), read into memory once at start. */
export const ConsolePages = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const dir = consoleDir()
    const files = new Map<string, { readonly body: Uint8Array; readonly type: string }>()
    if (dir !== undefined) {
      for (const name of readdirSync(dir)) {
        files.set(name, { body: readFileSync(`${dir}${name}`), type: types[extname(name)] ?? "application/octet-stream" })
      }
    }
    yield* router.get("/", Effect.succeed(HttpServerResponse.empty({ status: 302, headers: { location: "/console/" } })))
    // The router takes `/console/` for `/console` too; the page's own links are absolute.
    const page = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        if (files.size === 0) return missing
        const name = new URL(request.url, "http://console").pathname.replace(/^\/console\/?/, "")
        // Every path the console's own routing uses is its one page.
        const file = files.get(name) ?? files.get("index.html")!
        return HttpServerResponse.uint8Array(file.body, {
          contentType: file.type,
          headers: { "cache-control": name === "" || !files.has(name) ? "no-cache" : "max-age=300" },
        })
      })
    yield* router.get("/console", page)
    yield* router.get("/console/*", page)
  }),
)
