/** A node of the gate's queue; the waiter objects themselves are linked, so queueing allocates nothing. */
export interface GateWaiter<T> {
  prev: T | undefined
  next: T | undefined
  queued: boolean
}

/**
 * At most `limit` holders at once; the rest wait in FIFO order. A waiter can leave the queue at any
 * point in O(1) (its client went away).
 */
export class ConcurrencyGate<T extends GateWaiter<T>> {
  running = 0
  waiting = 0
  private head: T | undefined
  private tail: T | undefined

  constructor(readonly limit: number) {}

  /** Takes a slot if one is free. */
  tryEnter(): boolean {
    if (this.running >= this.limit || this.waiting > 0) return false
    this.running++
    return true
  }

  enqueue(waiter: T): void {
    waiter.queued = true
    waiter.prev = this.tail
    waiter.next = undefined
    if (this.tail === undefined) this.head = waiter
    else this.tail.next = waiter
    this.tail = waiter
    this.waiting++
  }

  remove(waiter: T): void {
    if (!waiter.queued) return
    waiter.queued = false
    if (waiter.prev === undefined) this.head = waiter.next
    else waiter.prev.next = waiter.next
    if (waiter.next === undefined) this.tail = waiter.prev
    else waiter.next.prev = waiter.prev
    waiter.prev = undefined
    waiter.next = undefined
    this.waiting--
  }

  leave(): void {
    this.running--
  }

  /** The next waiter, now holding a slot, if a slot is free and someone waits. */
  admitNext(): T | undefined {
    const first = this.head
    if (first === undefined || this.running >= this.limit) return undefined
    this.remove(first)
    this.running++
    return first
  }

  /** Empties the queue, returning what was in it. */
  drain(): T[] {
    const waiters: T[] = []
    for (let waiter = this.head; waiter !== undefined; waiter = this.head) {
      this.remove(waiter)
      waiters.push(waiter)
    }
    return waiters
  }
}
