import type { HttpApi } from "@effect/platform"

interface Template {
  readonly method: string
  readonly route: string
  readonly pattern: RegExp
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** `/v1/batches/:batch_id` → a pattern of the paths it serves; a `:name` segment matches any one segment. */
export const routePattern = (route: string) =>
  new RegExp(`^${route.split("/").map((segment) => (segment.startsWith(":") ? "[^/]+" : escape(segment))).join("/")}$`)

/**
 * The route template a request matched (`/v1/batches/:batch_id`), never its raw path, so the
 * request metrics keep one series per endpoint. Built once from the API's own endpoints, plus the
 * pages served beside it; anything else is `unmatched`.
 */
export const routeTemplates = (api: HttpApi.HttpApi.Any, pages: ReadonlyArray<string>) => {
  const templates: Array<Template> = []
  const reflected = api as unknown as {
    readonly groups: Record<string, { readonly endpoints: Record<string, { readonly path: string; readonly method: string }> }>
  }
  for (const group of Object.values(reflected.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      templates.push({ method: endpoint.method, route: endpoint.path, pattern: routePattern(endpoint.path) })
    }
  }
  // Literal routes first: `/v1/batches/:batch_id` must not take `/v1/batches/x/results`, nor a parameter a fixed path.
  templates.sort((a, b) => b.route.split("/").length - a.route.split("/").length || a.route.split(":").length - b.route.split(":").length)
  return (method: string, path: string): string => {
    for (const t of templates) if (t.method === method && t.pattern.test(path)) return t.route
    for (const page of pages) if (path === page || path.startsWith(`${page}/`)) return page
    return "unmatched"
  }
}
