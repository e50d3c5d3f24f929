import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream"
import { Clock, Deferred, Effect, Layer, Queue, Ref, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import {
  type LoadReport,
  type SlotSharing,
  elsewhere,
  initialSharing,
  interactiveElsewhere,
  lapse,
  leavingReport,
  mayTake,
  nextReport,
  received,
  waitsForOthers,
} from "../../domain/account/slotSharing.js"
import type { NatsDeployment } from "../../config/nats.js"
import { LogUnavailable } from "../../eventlog/EventLog.js"
import { LoadSharing, type LoadSharingShape } from "../LoadSharing.js"
import { scopedNatsConnection } from "../../eventlog/natsConnection.js"

/** A report not renewed for this long is dropped: a stopped instance's requests stop counting then. */
export const LOAD_TTL_MS = 10_000
const RENEW_MS = LOAD_TTL_MS / 4
const COALESCE_MS = 2
/** How long `nextReports` waits for a report before it gives up. */
const ROUND_WAIT_MS = 250
const STREAM = "SLUICE_LOAD"
const SUBJECTS = "sluice.load.>"
const encoder = new TextEncoder()
const decoder = new TextDecoder()

const isReport = (value: unknown): value is LoadReport => {
  const r = value as LoadReport | null
  return (
    typeof r === "object" && r !== null && typeof r.instance === "string" && typeof r.life === "string" &&
    typeof r.seq === "number" && typeof r.accounts === "object" && typeof r.interactive === "object" && typeof r.seen === "object"
  )
}

const movedModels = (before: LoadReport | undefined, after: LoadReport | undefined, into: Set<string>) => {
  const a = before?.interactive ?? {}
  const b = after?.interactive ?? {}
  for (const id of new Set([...Object.keys(a), ...Object.keys(b)])) if ((a[id] ?? 0) !== (b[id] ?? 0)) into.add(id)
}

/**
 * Reports on a JetStream stream that keeps every message for twice the TTL, so each instance reads
 * all reports in the stream's one order (the bound in slotSharing.ts needs both). Reports and reads
 * run on wall-clock time: they are I/O between processes, not a rule of the actors.
 */
const make = (url: string, instanceId: string, replicas: number) =>
  Effect.gen(function* () {
    const clock = Clock.make()
    const subject = `sluice.load.${instanceId.replace(/[^A-Za-z0-9_-]/g, "_")}`
    const nc = yield* scopedNatsConnection(url, "load sharing")
    const jsm = yield* Effect.tryPromise({
      try: () => jetstreamManager(nc),
      catch: (e) => new LogUnavailable({ message: `load sharing: JetStream unavailable: ${String(e)}`, cause: e }),
    })
    const js = jetstream(nc)
    let state: SlotSharing = initialSharing(instanceId, randomUUID())
    // Released before the connection closes: a stopping instance, whose requests have ended by then
    // (the actors are released first), tells the others to forget it rather than let its report lapse.
    yield* Effect.addFinalizer(() =>
      Effect.promise(() =>
        js.publish(subject, encoder.encode(JSON.stringify(leavingReport(state))), { timeout: 1_000 }).then(
          () => undefined,
          () => undefined,
        ),
      ),
    )
    // As many replicas as the log: reports that vanish with one node would stop every limited account.
    // Like the log's stream, an existing one is raised to the count, never lowered.
    const ensureStream = Effect.tryPromise(async () => {
      const config = {
        name: STREAM,
        subjects: [SUBJECTS],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        max_age: 2 * LOAD_TTL_MS * 1_000_000,
        num_replicas: replicas,
      }
      const existing = await jsm.streams.info(STREAM).catch(() => undefined)
      if (existing === undefined) {
        await jsm.streams.add(config).catch(async (e: unknown) => {
          // Another instance created it first.
          if (await jsm.streams.info(STREAM).then(() => true, () => false)) return
          throw e
        })
      } else if (existing.config.num_replicas < replicas) {
        await jsm.streams.update(STREAM, { num_replicas: replicas })
      }
    })
    yield* ensureStream.pipe(
      Effect.retry(Schedule.spaced("500 millis").pipe(Schedule.intersect(Schedule.recurs(20)))),
      Effect.mapError((e) => new LogUnavailable({ message: `cannot create stream ${STREAM}: ${String(e.error)}`, cause: e })),
      Effect.withClock(clock),
    )

    const accounts = new Map<string, number>()
    const interactive = new Map<string, number>()
    const listeners: Array<(models: ReadonlySet<string>) => void> = []
    const dirty = yield* Queue.sliding<void>(1)
    const changed = () => void Queue.unsafeOffer(dirty, undefined)
    const read = yield* Ref.make(yield* Deferred.make<void>())

    const announce = (models: ReadonlySet<string>) =>
      Effect.gen(function* () {
        for (const listener of listeners) listener(models)
        const next = yield* Deferred.make<void>()
        yield* Deferred.succeed(yield* Ref.getAndSet(read, next), undefined)
      })

    // One report in flight at a time: changes made while it is sent go into the next one.
    const report = Effect.gen(function* () {
      const [next, sent] = nextReport(state, Object.fromEntries(accounts), Object.fromEntries(interactive))
      state = next
      yield* Effect.tryPromise(() => js.publish(subject, encoder.encode(JSON.stringify(sent))))
    })
    yield* Queue.take(dirty).pipe(
      Effect.timeout(RENEW_MS),
      Effect.ignore,
      // A burst of changes goes out as one report.
      Effect.zipRight(Effect.sleep(COALESCE_MS)),
      Effect.zipRight(report),
      // The rule fails closed: with no report coming back, limited accounts start nothing here.
      Effect.catchAll(() => Effect.sleep("500 millis")),
      Effect.forever,
      Effect.withClock(clock),
      Effect.forkScoped,
    )

    const apply = (value: unknown) => {
      if (!isReport(value)) return undefined
      const before = state.peers.get(value.life)?.report
      const r = received(state, value, clock.unsafeCurrentTimeMillis())
      state = r.state
      if (r.acknowledge) changed()
      const models = new Set<string>()
      movedModels(before, state.peers.get(value.life)?.report, models)
      return models
    }

    // A reconnect starts a new consumer from the message after the last one read, as the log's follow does.
    let from = 1
    const readFrom = Effect.async<never, Error>((resume) => {
      let closed = false
      let close = () => {
        closed = true
      }
      void (async () => {
        const consumer = await js.consumers.get(STREAM, { filter_subjects: SUBJECTS, opt_start_seq: from })
        const messages = await consumer.consume({ max_messages: 256 })
        close = () => void messages.close().catch(() => undefined)
        if (closed) close()
        for await (const m of messages) {
          from = m.seq + 1
          let models: Set<string> | undefined
          try {
            models = apply(JSON.parse(decoder.decode(m.data)))
          } catch {
            models = undefined
          }
          Effect.runSync(announce(models ?? new Set()))
        }
        throw new Error("load reports ended")
      })().catch((e: unknown) => resume(Effect.fail(e instanceof Error ? e : new Error(String(e)))))
      return Effect.sync(() => close())
    })
    const reconnects = yield* Queue.unbounded<void>()
    yield* Effect.promise(async () => {
      for await (const status of nc.status()) if (status.type === "reconnect") Queue.unsafeOffer(reconnects, undefined)
    }).pipe(Effect.forkScoped)
    yield* readFrom.pipe(
      Effect.raceFirst(Queue.take(reconnects)),
      Effect.catchAll(() => Effect.sleep("500 millis")),
      Effect.forever,
      Effect.withClock(clock),
      Effect.forkScoped,
    )

    yield* Effect.sleep(RENEW_MS).pipe(
      Effect.zipRight(
        Effect.suspend(() => {
          const before = state
          state = lapse(state, clock.unsafeCurrentTimeMillis(), LOAD_TTL_MS)
          if (state === before) return Effect.void
          const models = new Set<string>()
          for (const [id, peer] of before.peers) if (!state.peers.has(id)) movedModels(peer.report, undefined, models)
          return announce(models)
        }),
      ),
      Effect.forever,
      Effect.withClock(clock),
      Effect.forkScoped,
    )
    changed()

    const now = () => clock.unsafeCurrentTimeMillis()
    const set = (counts: Map<string, number>, id: string, n: number) => {
      if ((counts.get(id) ?? 0) === n) return
      if (n > 0) counts.set(id, n)
      else counts.delete(id)
      changed()
    }
    return {
      mayTake: (accountId, local, concurrency) => mayTake(state, accountId, local, concurrency, now(), LOAD_TTL_MS),
      waitsForOthers: (accountId, local, concurrency) => waitsForOthers(state, accountId, local, concurrency, now(), LOAD_TTL_MS),
      accountElsewhere: (accountId) => elsewhere(state, accountId),
      interactiveElsewhere: (modelId) => interactiveElsewhere(state, modelId),
      setAccount: (accountId, n) => set(accounts, accountId, n),
      setInteractive: (modelId, n) => set(interactive, modelId, n),
      onReports: (listener) => void listeners.push(listener),
      nextReports: Effect.flatMap(Ref.get(read), Deferred.await).pipe(Effect.timeout(ROUND_WAIT_MS), Effect.ignore, Effect.withClock(clock)),
    } satisfies LoadSharingShape
  })

/** Instances on one NATS server (or cluster) share their load through reports on the `SLUICE_LOAD` stream. */
export const natsLoadSharing = (nats: NatsDeployment, instanceId: string) =>
  Layer.scoped(LoadSharing, make(nats.url, instanceId, nats.replicas))
