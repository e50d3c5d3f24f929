import { type Spread, spread } from "./stats.js"

export type Backend = "embedded" | "nats"

export interface Target {
  readonly op: "<=" | ">="
  readonly value: number
}

/** One row of the table: a figure over repeated trials, and whether its median meets the target. */
export interface Figure extends Spread {
  readonly id: string
  readonly scenario: string
  readonly backend: Backend | "-"
  readonly figure: string
  readonly samples: ReadonlyArray<number>
  readonly digits: number
  readonly target: Target | undefined
  readonly met: boolean | undefined
}

export interface Skipped {
  readonly id: string
  readonly reason: string
}

export interface FigureInput {
  readonly id: string
  readonly scenario: string
  readonly backend: Backend | "-"
  readonly figure: string
  readonly samples: ReadonlyArray<number>
  readonly digits?: number
  readonly target?: Target
}

export const figure = (input: FigureInput): Figure => {
  const s = spread(input.samples)
  const { target } = input
  const met =
    target === undefined || Number.isNaN(s.median) ? undefined : target.op === "<=" ? s.median <= target.value : s.median >= target.value
  return { ...input, ...s, digits: input.digits ?? 0, target, met }
}

export const atMost = (value: number): Target => ({ op: "<=", value })
export const atLeast = (value: number): Target => ({ op: ">=", value })

/** What a scenario hands back: its rows, and lines worth printing under the table (choices, caveats). */
export interface ScenarioResult {
  readonly figures: ReadonlyArray<Figure>
  readonly notes: ReadonlyArray<string>
}
