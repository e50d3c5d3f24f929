import { slotsFull } from "../../domain/account/ownerVerdict.js"

const bump = (counts: Map<string, number>, accountId: string, by: number) => {
  const n = (counts.get(accountId) ?? 0) + by
  if (n > 0) counts.set(accountId, n)
  else counts.delete(accountId)
}

/**
 * An account's concurrent-request slots on this instance: its running batch rows and interactive
 * requests together. `elsewhere` counts the account's requests on the other instances.
 */
export const makeAccountSlots = (elsewhere: (accountId: string) => number = () => 0) => {
  const running = new Map<string, number>()
  const interactive = new Map<string, number>()
  /** Accounts a request was refused for want of a slot since their last release: only their releases wake the actors. */
  const refusedFull = new Set<string>()

  const local = (accountId: string) => (running.get(accountId) ?? 0) + (interactive.get(accountId) ?? 0)
  const inUse = (accountId: string) => local(accountId) + elsewhere(accountId)
  return {
    inUse,
    /** This instance's own requests of the account, as it tells the others. */
    local,
    /** Accounts with a request on this instance. */
    accounts: (): ReadonlySet<string> => new Set([...running.keys(), ...interactive.keys()]),
    hasFree: (accountId: string, concurrency: number | null) => !slotsFull(concurrency, inUse(accountId)),
    refused: (accountId: string) => void refusedFull.add(accountId),
    acquire: (accountId: string) => bump(running, accountId, 1),
    acquireInteractive: (accountId: string) => bump(interactive, accountId, 1),
    /** Whether the release may let a refused request start: its account was refused since its last release. */
    release: (accountId: string) => {
      bump(running, accountId, -1)
      return refusedFull.delete(accountId)
    },
    releaseInteractive: (accountId: string) => {
      bump(interactive, accountId, -1)
      return refusedFull.delete(accountId)
    },
    /** Another instance freed slots of accounts: any of them refused here may start now. */
    freedElsewhere: (accountIds: Iterable<string>) => {
      let any = false
      for (const id of accountIds) if (refusedFull.delete(id)) any = true
      return any
    },
  }
}

export type AccountSlots = ReturnType<typeof makeAccountSlots>
