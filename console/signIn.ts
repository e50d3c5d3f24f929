import { ApiError, call } from "./api.js"
import { h, show } from "./dom.js"
import { session } from "./session.js"

/** Checks the key against the API before keeping it, so a wrong one is told at once. */
export const signIn = (root: HTMLElement, problem?: string) => {
  const input = h("input", { type: "password", name: "apiKey", autocomplete: "off", placeholder: "sk-sluice-…", required: true }) as HTMLInputElement
  const message = h("div", { role: "alert" })
  if (problem !== undefined) message.replaceChildren(h("p", { class: "error" }, problem))
  const submit = async (event: Event) => {
    event.preventDefault()
    const key = input.value.trim()
    try {
      await call(key, "GET", "/v1/batches?limit=1")
      session.setKey(key)
      location.hash = "#/batches"
    } catch (error) {
      const text =
        error instanceof ApiError && error.status === 401
          ? `This API key was not accepted: ${error.message}`
          : `Signing in failed: ${error instanceof Error ? error.message : String(error)}`
      message.replaceChildren(h("p", { class: "error" }, text))
    }
  }
  show(
    root,
    h(
      "form",
      { class: "signin", onsubmit: submit },
      h("h1", {}, "Sign in"),
      h("label", {}, "API key", input),
      h("button", { class: "primary", type: "submit" }, "Sign in"),
      message,
      h("p", { class: "muted" }, "The key stays in this tab's session storage and is sent as a bearer token."),
    ),
  )
  input.focus()
}
