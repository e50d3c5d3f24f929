import { Config } from "effect"

/**
 * BENCH-ONLY, never in production. `SLUICE_BENCH_WITHOUT_CHAIN=1` makes the log write no hash-chain
 * links (`Sluice-Sha256`, `Sluice-Prev-Sha256`), so `npm run bench` can run the same scenario with
 * and without them and report what the chain costs. A log written so has no tamper evidence (`sluice
 * audit verify` counts its messages as written before chains existed): it is for throw-away data only.
 */
export const benchWithoutChain = Config.boolean("SLUICE_BENCH_WITHOUT_CHAIN").pipe(Config.withDefault(false))
