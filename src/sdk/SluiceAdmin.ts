import type {
  AccountObject,
  CreateAccountPayload,
  CreatedKey,
  CreateKeyPayload,
  RevokedKey,
  UpdateAccountPayload,
} from "../domain/api/index.js"
import type { OnRetry } from "./backoff.js"
import { defaultBaseUrl, retryPolicyOf, trimSlash } from "./SluiceClient.js"
import { Transport } from "./transport.js"

export type { CreatedKey, RevokedKey }
export type AdminAccount = AccountObject
export type CreateAccountInput = typeof CreateAccountPayload.Type
export type UpdateAccountInput = typeof UpdateAccountPayload.Type
export type CreateKeyInput = typeof CreateKeyPayload.Type

export interface SluiceAdminOptions {
  /** Default: `SLUICE_ADMIN_TOKEN`. */
  readonly adminToken?: string
  /** The same base URL as SluiceClient's (ending in `/v1`); admin calls go to `/admin/v1` beside it. */
  readonly baseUrl?: string
  readonly maxRetries?: number
  readonly retryBaseDelayMs?: number
  readonly fetch?: typeof fetch
  readonly onRetry?: OnRetry
}

export interface AdminLease {
  readonly model: string
  readonly owner: string
  readonly since: number
  readonly renewed_at: number
  readonly next_renewal_at: number | null
  readonly revision: number
}

/** `http://host:8080/v1` → `http://host:8080/admin/v1`; a base URL without `/v1` is taken as the server's root. */
const adminBaseUrl = (baseUrl: string) => {
  const trimmed = trimSlash(baseUrl)
  return `${trimmed.endsWith("/v1") ? trimmed.slice(0, -"/v1".length) : trimmed}/admin/v1`
}

const path = (...parts: ReadonlyArray<string>) => parts.map((p) => `/${encodeURIComponent(p)}`).join("")

/** The admin API (docs/api.md, "Admin API"): accounts and their keys, authenticated by `SLUICE_ADMIN_TOKEN`. */
export class SluiceAdmin {
  private readonly transport: Transport

  constructor(options: SluiceAdminOptions = {}) {
    const token = options.adminToken ?? process.env["SLUICE_ADMIN_TOKEN"]
    if (token === undefined || token === "") {
      throw new Error("SluiceAdmin needs the admin token: pass { adminToken } or set SLUICE_ADMIN_TOKEN")
    }
    this.transport = new Transport({
      baseUrl: adminBaseUrl(options.baseUrl ?? process.env["SLUICE_BASE_URL"] ?? defaultBaseUrl),
      token,
      retry: retryPolicyOf(options),
      fetch: options.fetch ?? globalThis.fetch,
      ...(options.onRetry === undefined ? {} : { onRetry: options.onRetry }),
    })
  }

  readonly accounts = {
    /** `POST /admin/v1/accounts`; tier `standard` unless given. */
    create: (input: CreateAccountInput): Promise<AdminAccount> =>
      this.transport.json("POST", "/accounts", { body: input, mode: "create" }),
    /** `PATCH /admin/v1/accounts/{id}`: any of tier, daily_quota_usd, concurrency, models, max_priority, status. */
    update: (id: string, patch: UpdateAccountInput): Promise<AdminAccount> =>
      this.transport.json("PATCH", path("accounts", id), { body: patch }),
    suspend: (id: string): Promise<AdminAccount> => this.accounts.update(id, { status: "suspended" }),
    activate: (id: string): Promise<AdminAccount> => this.accounts.update(id, { status: "active" }),
    /** Ends the account (status `deleted`); its keys answer 401 from then on. */
    delete: (id: string): Promise<AdminAccount> => this.accounts.update(id, { status: "deleted" }),
  }

  /** `GET /admin/v1/leases`: which instance owns each model's slots, since when, and its next renewal. */
  readonly leases = (): Promise<{ readonly object: "list"; readonly instance: string; readonly data: ReadonlyArray<AdminLease> }> =>
    this.transport.json("GET", "/leases")

  readonly keys = {
    /** `POST /admin/v1/accounts/{accountId}/keys`. */
    create: (accountId: string, input: CreateKeyInput = {}): Promise<CreatedKey> =>
      this.transport.json("POST", `${path("accounts", accountId)}/keys`, { body: input, mode: "create" }),
    /** `POST /admin/v1/keys/{keyId}/revoke`. */
    revoke: (keyId: string): Promise<RevokedKey> =>
      this.transport.json("POST", `${path("keys", keyId)}/revoke`),
  }
}
