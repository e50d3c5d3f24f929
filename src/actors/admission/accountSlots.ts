const bump = (counts: Map<string, number>, accountId: string, by: number) => {
  const n = (counts.get(accountId) ?? 0) + by
  if (n > 0) counts.set(accountId, n)
  else counts.delete(accountId)
}

/**
 * An account's concurrent-request slots in use on this instance: its running batch rows and
 * interactive requests together. `changed` hears each account's new count.
 */
export const makeAccountSlots = (changed: (accountId: string, inUse: number) => void = () => undefined) => {
  const running = new Map<string, number>()
  const interactive = new Map<string, number>()
  /** Accounts a request was refused for want of a slot since their last release: only their releases wake the actors. */
  const refusedFull = new Set<string>()

  const inUse = (accountId: string) => (running.get(accountId) ?? 0) + (interactive.get(accountId) ?? 0)
  const move = (counts: Map<string, number>, accountId: string, by: number) => {
    bump(counts, accountId, by)
    changed(accountId, inUse(accountId))
  }
  return {
    inUse,
    refused: (accountId: string) => void refusedFull.add(accountId),
    acquire: (accountId: string) => move(running, accountId, 1),
    acquireInteractive: (accountId: string) => move(interactive, accountId, 1),
    /** Whether the release may let a refused request start: its account was refused since its last release. */
    release: (accountId: string) => {
      move(running, accountId, -1)
      return refusedFull.delete(accountId)
    },
    releaseInteractive: (accountId: string) => {
      move(interactive, accountId, -1)
      return refusedFull.delete(accountId)
    },
    /** The other instances' counts moved: every account refused here may start now. */
    forgetRefused: () => {
      const any = refusedFull.size > 0
      refusedFull.clear()
      return any
    },
  }
}

export type AccountSlots = ReturnType<typeof makeAccountSlots>
