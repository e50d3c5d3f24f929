import { type Browser, type Page, chromium } from "playwright-core"

/** Debian's Chromium, headless, with nothing that would reach past loopback. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  })

/**
 * A console page at `baseUrl` signed in with `apiKey`, once `ready` says the page after sign-in is up;
 * script errors on the page are collected in `errors`.
 */
export const signedInConsole = async (
  browser: Browser,
  options: {
    readonly baseUrl: string
    readonly apiKey: string
    readonly errors: Array<string>
    readonly ready: (page: Page) => Promise<unknown>
    readonly acceptDownloads?: boolean
  },
): Promise<Page> => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: options.acceptDownloads ?? false })
  page.on("pageerror", (error) => options.errors.push(`${page.url()}: ${error.message}`))
  await page.goto(`${options.baseUrl}/console/`)
  await page.fill("input[name=apiKey]", options.apiKey)
  await page.click("button[type=submit]")
  await options.ready(page)
  return page
}
