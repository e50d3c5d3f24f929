import { HASH_HEADER, isChained, linkHash, PREV_HASH_HEADER } from "../eventlog/eventHeaders.js"
import type { LogMessage } from "../eventlog/EventLog.js"

export interface ChainProblem {
  /** Whose subject it is: `batch <id>`, `response <id>`, `stream <id>` or `file <id>`. */
  readonly aggregate: string
  readonly subject: string
  readonly seq: number
  readonly what: string
}

interface SubjectChain {
  lastLink: string | undefined
  lastSeq: number
}

const aggregateOf = (subject: string) => subject.split(".", 2).join(" ")

/**
 * Walks every message of the chained subjects (batches', responses', streams' and files', a file's raw
 * parts included) in log order and checks each subject's hash chain: each message's data must match its
 * link, and its previous link must be the link of the message before it on its subject. An altered message
 * fails the first check; a removed or inserted one the second, at the message after it. Messages from
 * before chains existed (no link) may only open a subject.
 */
export const makeChainCheck = () => {
  const chains = new Map<string, SubjectChain>()
  const problems: Array<ChainProblem> = []
  let checked = 0
  let unchained = 0
  const add = (m: LogMessage) => {
    if (!isChained(m.subject)) return
    const chain = chains.get(m.subject) ?? { lastLink: undefined, lastSeq: 0 }
    chains.set(m.subject, chain)
    const problem = (what: string) => problems.push({ aggregate: aggregateOf(m.subject), subject: m.subject, seq: m.seq, what })
    const link = m.headers?.[HASH_HEADER]
    if (link === undefined) {
      if (chain.lastLink !== undefined) problem(`has no chain link, after chained messages on its subject (seq ${chain.lastSeq} the last): inserted or stripped`)
      else unchained++
      chain.lastSeq = m.seq
      return
    }
    checked++
    const prev = m.headers?.[PREV_HASH_HEADER] ?? ""
    const expected = chain.lastLink ?? ""
    if (prev !== expected) {
      problem(
        chain.lastLink === undefined
          ? "names a previous message that its subject no longer holds: an earlier message was removed"
          : `does not follow seq ${chain.lastSeq}, the message before it on its subject: a message between them was removed, or one of them inserted`,
      )
    }
    if (linkHash(prev, m.subject, m.data) !== link) problem("was altered: its data does not match its chain link")
    chain.lastLink = link
    chain.lastSeq = m.seq
  }
  return {
    add,
    problems: (): ReadonlyArray<ChainProblem> => problems,
    counts: () => ({ checked, unchained, subjects: chains.size }),
  }
}
