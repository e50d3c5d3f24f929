/** What a request body that is not JSON is refused with, wherever it is read. */
export const BodyMessage = {
  empty: "The request body is empty: expected a JSON object",
  notJson: "The request body is not valid JSON",
} as const
