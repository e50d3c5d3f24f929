import { Effect, Option } from "effect"
import { type RetryNotice, SluiceAdmin, SluiceClient } from "../sdk/index.js"
import { loadCredentials } from "./credentials.js"
import { fail } from "./failure.js"

/**
 * A one-off read (list, get, a download) gives up after two quick retries, about 1.5 s; a write, a
 * `wait` or a `stream` keeps the SDK's five, riding out a server restart.
 */
export const READ_RETRIES = 2

/** Said the moment a call fails, so an unreachable server is never a silent wait. */
export const sayRetrying = (n: RetryNotice) =>
  process.stderr.write(
    `${n.method} ${n.url} failed: ${n.reason}; retrying in ${(n.delayMs / 1000).toFixed(1)} s (${n.retry} of ${n.maxRetries})\n`,
  )

export const apiClient = (options: { readonly maxRetries?: number } = {}) =>
  Effect.suspend(() => {
    const { apiKey, baseUrl } = loadCredentials()
    if (apiKey === undefined) return fail("No API key: run `sluice auth login --api-key <key>` or set SLUICE_API_KEY")
    return Effect.succeed(new SluiceClient({ apiKey, baseUrl, onRetry: sayRetrying, ...options }))
  })

export const adminClient = (token: Option.Option<string>) =>
  Effect.suspend(() => {
    const adminToken = Option.getOrUndefined(token) ?? process.env["SLUICE_ADMIN_TOKEN"]
    if (adminToken === undefined || adminToken === "") return fail("No admin token: pass --admin-token or set SLUICE_ADMIN_TOKEN")
    return Effect.succeed(new SluiceAdmin({ adminToken, baseUrl: loadCredentials().baseUrl, onRetry: sayRetrying }))
  })
