import type Database from "better-sqlite3"
import { Either } from "effect"
import { sha256 } from "../../actors/Accounts.js"
import { FinalBatchStatuses } from "../../domain/api/BatchStatus.js"
import { accountReads } from "../../projections/accountReads.js"
import { type BatchRow, batchReads, toBatchObject } from "../../projections/batchReads.js"
import { lifecycleSeqReads } from "../../projections/lifecycleSeq.js"
import { parseResultId, resultReads } from "../../projections/resultReads.js"
import { apiKeyOf } from "../apiKey.js"
import { noEta } from "../eta.js"
import { parseAfter, parseErrorCodeFilter, parseLimit, parseStatusFilter } from "../pageParams.js"
import type { FrontFreshness } from "./frontFreshness.js"
import { makeLiveFacts } from "./liveFacts.js"
import type { FrontAsk, FrontReply, LiveFacts } from "./protocol.js"

type Param = string | ReadonlyArray<string> | undefined

/** A read a front answers itself: its status, JSON text, and the route template and account for its log line. */
export interface HotAnswer {
  readonly path: string
  readonly route: string
  readonly account: string
  readonly batchId?: string
  readonly body: string
}

/** What the reads need of the link to the dispatch process (primaryLink.ts). */
export interface FrontLink {
  readonly ask: (ask: FrontAsk extends infer A ? (A extends { id: number } ? Omit<A, "id"> : never) : never) => Promise<FrontReply>
  /** Whether the log answers, as the dispatch process last said; undefined before it has. */
  readonly logUp: () => boolean | undefined
}

const batchPath = /^\/v1\/batches\/([^/]+)$/
const resultsPath = /^\/v1\/batches\/([^/]+)\/results$/

/** The parameters a route's fast path knows; any other (or `as_of`) goes to the dispatch process, which answers every case. */
const known = (params: URLSearchParams, names: ReadonlyArray<string>) => {
  for (const name of params.keys()) if (!names.includes(name)) return false
  return true
}
const param = (params: URLSearchParams, name: string): Param => {
  const all = params.getAll(name)
  return all.length === 0 ? undefined : all.length === 1 ? all[0] : all
}
const parsed = <A>(either: Either.Either<A, unknown>) =>
  Either.isRight(either) ? { ok: true as const, value: either.right } : { ok: false as const }

/**
 * The reads clients poll, answered from the read model on the front's own connection: a batch, the
 * list of batches, a results page. Only the plain case that succeeds is answered here; a request with
 * anything else (no key, a batch not the caller's, a parameter out of range, `as_of`, an account with
 * a daily quota, the log away) answers `undefined`, and the front hands it to the dispatch process,
 * whose handlers answer every case, errors included, exactly as before.
 */
export const makeHotReads = (
  db: Database.Database,
  link: FrontLink,
  options: { readonly fresh: boolean; readonly wallClock: boolean; readonly freshness?: FrontFreshness },
) => {
  const accounts = accountReads(db)
  const batches = batchReads(db)
  const results = resultReads(db)
  const lifecycleSeq = lifecycleSeqReads(db)
  // One snapshot a read: the list's ids and their rows, and a row and its results, agree.
  const inSnapshot = <A>(read: () => A) => db.transaction(read)()

  const caller = (headers: Record<string, string | Array<string> | undefined>) => {
    const secret = apiKeyOf(headers)
    if (secret === undefined) return undefined
    const key = accounts.keyBySecret(sha256(secret))
    if (key === undefined || key.revoked_at !== null) return undefined
    const account = accounts.account(key.account_id)
    // A daily quota is checked against the usage of the actors' day: the dispatch process answers those accounts.
    if (account === undefined || account.status !== "active" || account.daily_quota_usd !== null) return undefined
    return { accountId: account.id, expiresAt: key.expires_at }
  }

  /** A batch object with the facts that live in the dispatch process; a final batch's are none. */
  const shownWith = (live: ReadonlyMap<string, LiveFacts>) => (row: BatchRow) => {
    const facts = live.get(row.id)
    return facts === undefined ? toBatchObject(row, noEta, null) : toBatchObject(row, facts.eta, facts.waiting)
  }

  /**
   * Asked of the dispatch process for this read: the log's standing (on NATS once the read model has
   * caught up with its head), the actors' time, and each open row's facts. A key that has expired by
   * that time is the dispatch process's to refuse.
   */
  const asked = async (expiresAt: number | null, rows: ReadonlyArray<BatchRow> = []) => {
    const open = rows.filter((row) => !FinalBatchStatuses.has(row.status))
    const reply = await link.ask(open.length === 0 ? { t: "reach" } : { t: "live", rows: open })
    if (!reply.ok || (expiresAt !== null && expiresAt * 1000 <= reply.now)) return undefined
    return shownWith(new Map(open.map((row, i) => [row.id, reply.live![i]!])))
  }

  const liveFacts = makeLiveFacts((rows) => link.ask({ t: "live", rows }))
  /**
   * The same without asking, once the dispatch process has said whether the log answers and while the
   * actors run on the wall clock: only a running batch's facts not kept (liveFacts.ts) are asked for.
   */
  const reach = async (expiresAt: number | null, rows: ReadonlyArray<BatchRow> = [], version = 0) => {
    const logUp = link.logUp()
    if (!options.wallClock || logUp === undefined) return asked(expiresAt, rows)
    if (!logUp || (expiresAt !== null && expiresAt * 1000 <= Date.now())) return undefined
    const live = rows.length === 0 ? new Map<string, LiveFacts>() : await liveFacts(rows, version)
    return live === undefined ? undefined : shownWith(live)
  }
  /**
   * On NATS the read model first catches up with what the calls wrote (bounded), as every instance's
   * reads do: found here when it has (frontFreshness.ts) and the front may tell the time itself; asked
   * of the dispatch process, which waits for its projections, when it has not.
   */
  const caughtUp = async (expiresAt: number | null) => {
    if (!options.fresh) return true
    const { freshness } = options
    if (freshness !== undefined && options.wallClock && link.logUp() === true && (expiresAt === null || expiresAt * 1000 > Date.now())) {
      if (await freshness.caughtUp()) return true
    }
    return (await asked(expiresAt)) !== undefined
  }

  const retrieve = async (who: { accountId: string; expiresAt: number | null }, batchId: string) => {
    if (!(await caughtUp(who.expiresAt))) return undefined
    const { row, version } = inSnapshot(() => ({ row: batches.ofAccount(who.accountId, batchId), version: lifecycleSeq() }))
    if (row === undefined) return undefined
    const shown = await reach(who.expiresAt, [row], version)
    return shown === undefined ? undefined : JSON.stringify(shown(row))
  }

  const list = async (who: { accountId: string; expiresAt: number | null }, params: URLSearchParams) => {
    const limit = parsed(parseLimit(param(params, "limit"), 100, 20))
    const after = parsed(parseAfter(param(params, "after")))
    if (!limit.ok || !after.ok) return undefined
    if (!(await caughtUp(who.expiresAt))) return undefined
    const read = inSnapshot(() => {
      let afterSeq: number | undefined
      if (after.value !== undefined) {
        const anchor = batches.ofAccount(who.accountId, after.value)
        if (anchor === undefined) return undefined
        afterSeq = anchor.seq
      }
      return { rows: batches.page(who.accountId, limit.value, afterSeq), version: lifecycleSeq() }
    })
    if (read === undefined) return undefined
    const { rows, version } = read
    const page = rows.slice(0, limit.value)
    const shown = await reach(who.expiresAt, page, version)
    if (shown === undefined) return undefined
    const data = page.map(shown)
    return JSON.stringify({
      object: "list",
      data,
      has_more: rows.length > limit.value,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    })
  }

  const resultsPage = async (who: { accountId: string; expiresAt: number | null }, batchId: string, params: URLSearchParams) => {
    const limit = parsed(parseLimit(param(params, "limit"), 1000, 100))
    const after = parsed(parseAfter(param(params, "after")))
    const status = parsed(parseStatusFilter(param(params, "status")))
    const code = parsed(parseErrorCodeFilter(param(params, "error_code")))
    if (!limit.ok || !after.ok || !status.ok || !code.ok) return undefined
    let from = 0
    if (after.value !== undefined) {
      const idx = parseResultId(after.value)
      if (idx === undefined) return undefined
      from = idx + 1
    }
    if (!(await caughtUp(who.expiresAt)) || (await reach(who.expiresAt)) === undefined) return undefined
    return inSnapshot(() =>
      batches.ofAccount(who.accountId, batchId) === undefined
        ? undefined
        : results.pageJson(batchId, from, limit.value, { status: status.value, code: code.value }),
    )
  }

  /** The answer of a read this front serves itself, or `undefined` to hand the request on. */
  return async (method: string, url: string, headers: Record<string, string | Array<string> | undefined>): Promise<HotAnswer | undefined> => {
    if (method !== "GET") return undefined
    const parsedUrl = new URL(url, "http://front")
    const path = parsedUrl.pathname
    const params = parsedUrl.searchParams
    let route: string
    let batchId: string | undefined
    let answer: (who: { accountId: string; expiresAt: number | null }) => Promise<string | undefined>
    if (path === "/v1/batches") {
      if (!known(params, ["limit", "after"])) return undefined
      route = "/v1/batches"
      answer = (who) => list(who, params)
    } else if ((batchId = batchPath.exec(path)?.[1]) !== undefined) {
      if (!known(params, [])) return undefined
      const id = batchId
      route = "/v1/batches/:batch_id"
      answer = (who) => retrieve(who, id)
    } else if ((batchId = resultsPath.exec(path)?.[1]) !== undefined) {
      if (!known(params, ["limit", "after", "status", "error_code"])) return undefined
      const id = batchId
      route = "/v1/batches/:batch_id/results"
      answer = (who) => resultsPage(who, id, params)
    } else return undefined
    const who = caller(headers)
    if (who === undefined) return undefined
    const body = await answer(who)
    return body === undefined ? undefined : { path, route, account: who.accountId, body, ...(batchId === undefined ? {} : { batchId }) }
  }
}
