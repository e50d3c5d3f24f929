/**
 * The only place idempotency subjects are built: `idempotency.<digest>`, `digest` being the hex
 * SHA-256 of the account and the key (a key may hold characters no subject may).
 */
export const idempotencySubject = (digest: string) => `idempotency.${digest}`

export const everyIdempotencyRecord = "idempotency.>"
