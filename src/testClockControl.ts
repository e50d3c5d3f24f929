import { Chunk, type Clock, Config, Context, Effect, Exit, Layer, Option, Scope, TestClock, TestContext, TestServices } from "effect"
import { createServer, type ServerResponse } from "node:http"

/**
 * TEST-ONLY. With `SLUICE_TEST_CLOCK=1` the actors run on a TestClock (starting at
 * `SLUICE_TEST_CLOCK_START_MS`, or now) that only moves when told to, through a separate HTTP
 * server on 127.0.0.1:`SLUICE_TEST_CLOCK_PORT`: `POST /adjust?ms=N` moves it forward and answers
 * the new time, `GET /now` answers the time. This is how tests drive time in a real process they
 * can kill -9. Without the variable none of this exists: no TestClock, no extra server.
 */
const TestClockConfig = Config.all({
  enabled: Config.boolean("SLUICE_TEST_CLOCK").pipe(Config.withDefault(false)),
  port: Config.option(Config.port("SLUICE_TEST_CLOCK_PORT")),
  startMs: Config.option(Config.integer("SLUICE_TEST_CLOCK_START_MS")),
})

export const testClock = Effect.gen(function* () {
  const options = yield* TestClockConfig
  if (!options.enabled) return Option.none<Clock.Clock>()
  if (Option.isNone(options.port)) return yield* Effect.dieMessage("SLUICE_TEST_CLOCK=1 needs SLUICE_TEST_CLOCK_PORT")
  const port = options.port.value
  const startMs = Option.getOrElse(options.startMs, () => Date.now())
  // Built on its own fiber and scope: building the layer here would put this whole program (log,
  // projections, HTTP server) on the TestClock too, and only the actors run on it.
  const { clock } = yield* Effect.acquireRelease(
    Effect.promise(async () => {
      const scope = Effect.runSync(Scope.make())
      const layer = TestClock.live(TestClock.makeData(startMs, Chunk.empty())).pipe(
        Layer.provide(Layer.merge(TestServices.liveLayer(), TestServices.annotationsLayer())),
        Layer.provide(TestContext.LiveContext),
      )
      const clock = await Effect.runPromise(Layer.buildWithScope(layer, scope).pipe(Effect.map((ctx) => Context.get(ctx, TestClock.TestClock))))
      return { scope, clock }
    }),
    ({ scope }) => Scope.close(scope, Exit.void),
  )
  const answer = (res: ServerResponse, status: number, body: string) =>
    res.writeHead(status, { "content-type": "text/plain" }).end(body)
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    if (req.method === "GET" && url.pathname === "/now") {
      Effect.runPromise(clock.currentTimeMillis).then((now) => answer(res, 200, String(now)), (e) => answer(res, 500, String(e)))
    } else if (req.method === "POST" && url.pathname === "/adjust") {
      const ms = Number(url.searchParams.get("ms"))
      if (!Number.isFinite(ms) || ms < 0) return answer(res, 400, "ms must be a non-negative number")
      Effect.runPromise(Effect.zipRight(clock.adjust(ms), clock.currentTimeMillis)).then(
        (now) => answer(res, 200, String(now)),
        (e) => answer(res, 500, String(e)),
      )
    } else answer(res, 404, "not found")
  })
  yield* Effect.acquireRelease(
    Effect.async<void, Error>((resume) => {
      server.once("error", (e) => resume(Effect.fail(e)))
      server.listen(port, "127.0.0.1", () => resume(Effect.void))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      }),
  )
  yield* Effect.logWarning(`TEST-ONLY: the actors run on a TestClock at ${startMs}, adjusted on http://127.0.0.1:${port}`)
  return Option.some<Clock.Clock>(clock)
})

