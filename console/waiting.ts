import type { WaitingOn } from "./api.js"
import { h, when } from "./dom.js"

/** Why unfinished work waits, as a fact's value: the reason, and since when; its detail on hover and below. */
export const waitingFact = (waiting: WaitingOn | null | undefined): HTMLElement =>
  waiting == null
    ? h("span", { id: "waiting-on", class: "muted" }, "nothing")
    : h("span", { id: "waiting-on", class: "waiting", title: waiting.detail, "data-reason": waiting.reason }, `${waiting.reason} since ${when(waiting.since)}`)

/** The detail, for a page that has room for a sentence. */
export const waitingDetail = (waiting: WaitingOn | null | undefined): HTMLElement =>
  h("p", { id: "waiting-detail", class: "muted" }, waiting == null ? "" : `Waiting: ${waiting.detail}.`)
