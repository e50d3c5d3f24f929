/**
 * The environment the server process runs in, set before it starts: `npm start` (package.json) and the
 * Docker image set the same, and a test checks that they do.
 *
 * glibc raises its mmap threshold whenever a large block is freed, up to 32 MiB; after a create has freed
 * its 32 MiB body, the blocks of the next ones (256 KiB events, the log's pages read back) come from the
 * heap and stay resident once freed. A fixed 1 MiB threshold keeps blocks that large mmapped, returned to
 * the system when freed, so the peak no longer grows with each large batch queued (bench B7), with
 * creates as fast. 128 KiB, glibc's initial threshold, mmaps every event buffer and slows creates.
 */
export const serverEnv: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: "1048576" }
