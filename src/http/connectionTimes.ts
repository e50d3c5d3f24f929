/** How long requests still open at shutdown may take before their connections are closed. */
export const SHUTDOWN_GRACE_MS = 10_000

// Node closes a keep-alive connection after 5 s idle. A client polling at about that pace (or whose
// pooled sockets were opened together and go idle together) sends on a connection the server is
// closing; when the event loop is busy, the server handles the expiry before the request that arrived
// meanwhile and resets it (B12's readers saw 21 ECONNRESETs within a millisecond). Idle connections
// are kept past the 60 s that load balancers commonly keep theirs, and cost only a socket.
export const KEEP_ALIVE_MS = 65_000

/** The server options every Sluice HTTP server (the dispatch process's, each HTTP front's) listens with. */
export const serverTimeouts = { keepAliveTimeout: KEEP_ALIVE_MS, headersTimeout: KEEP_ALIVE_MS + 1_000 } as const
