import { readFileSync } from "node:fs"
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/*
 * The suite's wall time is its longest worker's: files taking a minute or more that start last leave
 * the other worker idle at the end (on a fresh clone vitest has no durations of its own and orders by
 * file size, so the short partition files went last). Files are started longest first, by the seconds
 * a CI run took for each (fileDurations.json, refreshed from a CI log now and then); unlisted ones after
 * them, in vitest's order.
 */
const durations = JSON.parse(readFileSync(new URL("./fileDurations.json", import.meta.url), "utf8")) as Record<string, number>

export default class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const rest = await super.sort(files)
    const seconds = (f: TestSpecification) => durations[relative(process.cwd(), f.moduleId)] ?? 0
    return rest
      .map((file, order) => ({ file, order, s: seconds(file) }))
      .sort((a, b) => b.s - a.s || a.order - b.order)
      .map((x) => x.file)
  }
}
