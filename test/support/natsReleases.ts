import { accessSync, constants } from "node:fs"
import { join } from "node:path"
import { findBinary } from "./natsServer.js"

/** The releases `.ci/nats-servers.sh` unpacks into `.nats/<version>/`, newest first. */
export const FETCHED_RELEASES = ["2.15.1", "2.10.27"] as const
export type FetchedRelease = (typeof FETCHED_RELEASES)[number]

const projectRoot = join(import.meta.dirname, "..", "..")

/**
 * A nats-server release of the project's own (`.ci/nats-servers.sh`), or the system's (`"system"`: PATH, then
 * /usr/sbin; Debian bookworm's 2.9.10 here). Replicated streams are tested on the current release.
 */
export const natsBinary = (release: FetchedRelease | "system"): string => {
  if (release === "system") return findBinary()
  const binary = join(projectRoot, ".nats", release, "nats-server")
  try {
    accessSync(binary, constants.X_OK)
    return binary
  } catch {
    throw new Error(`nats-server ${release} not found at ${binary}: run bash .ci/nats-servers.sh (CI does) to fetch it`)
  }
}

/** The release replicated deployments are tested on. */
export const currentNatsBinary = () => natsBinary(FETCHED_RELEASES[0])
