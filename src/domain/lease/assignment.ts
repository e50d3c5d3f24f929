import { createHash } from "node:crypto"

const score = (instance: string, model: string) => createHash("sha256").update(`${instance}\u0000${model}`).digest().readUInt32BE(0)

/**
 * Which live instance should own each model: every instance works out the same answer from the same
 * list, the models are spread evenly (no instance more than one above another), and a model moves
 * only when the list changes. Highest random weight per model, taken in turn, among the instances that
 * have fewer than their share so far.
 */
export const assignment = (models: ReadonlyArray<string>, instances: ReadonlyArray<string>): ReadonlyMap<string, string> => {
  const live = [...new Set(instances)].sort()
  const owners = new Map<string, string>()
  if (live.length === 0) return owners
  const share = Math.ceil(models.length / live.length)
  const taken = new Map<string, number>()
  for (const model of [...new Set(models)].sort()) {
    let best: string | undefined
    let bestScore = -1
    for (const instance of live) {
      if ((taken.get(instance) ?? 0) >= share) continue
      const s = score(instance, model)
      if (s > bestScore) {
        best = instance
        bestScore = s
      }
    }
    owners.set(model, best!)
    taken.set(best!, (taken.get(best!) ?? 0) + 1)
  }
  return owners
}

export interface LeaseView {
  readonly me: string
  readonly models: ReadonlyArray<string>
  readonly instances: ReadonlyArray<string>
  /** Who holds each leased model now. */
  readonly holders: ReadonlyMap<string, string>
  /** How many rounds in a row each unleased model has been seen free. */
  readonly freeRounds: ReadonlyMap<string, number>
}

/** A model free for this many rounds is taken by any instance: its assigned owner is not taking it. */
export const FREE_ROUNDS_BEFORE_ANYONE = 2

/** What this instance does with the leases this round: take the free ones it should own, hand over the others'. */
export const leasePlan = (view: LeaseView): { readonly acquire: ReadonlyArray<string>; readonly handOver: ReadonlyArray<string> } => {
  const instances = view.instances.includes(view.me) ? view.instances : [...view.instances, view.me]
  const owners = assignment(view.models, instances)
  const acquire: Array<string> = []
  const handOver: Array<string> = []
  for (const model of view.models) {
    const holder = view.holders.get(model)
    const assigned = owners.get(model)
    if (holder === undefined) {
      if (assigned === view.me || (view.freeRounds.get(model) ?? 0) >= FREE_ROUNDS_BEFORE_ANYONE) acquire.push(model)
    } else if (holder === view.me && assigned !== view.me) handOver.push(model)
  }
  return { acquire, handOver }
}
