/** Polls until `ready` holds; the deadline is a safety net, not a timing assertion. */
export const waitFor = async (
  what: string,
  ready: () => Promise<boolean> | boolean,
  { timeoutMs = 30_000, everyMs = 20 }: { readonly timeoutMs?: number; readonly everyMs?: number } = {},
): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
