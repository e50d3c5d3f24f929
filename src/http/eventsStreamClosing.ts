import { Context, type Deferred } from "effect"

/**
 * Done when the server starts to shut down. Event streams never end by themselves while their batch
 * runs, so they end then, instead of holding the shutdown for its grace period: their clients
 * resume where they were with Last-Event-ID.
 */
export class EventStreamsClosing extends Context.Tag("Http/EventStreamsClosing")<EventStreamsClosing, Deferred.Deferred<void>>() {}
