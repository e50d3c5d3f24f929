/*
 * An uploaded file's id: `file-` and 24 base62 characters. A batch's output and error views are
 * `file-out-<hex>` and `file-err-<hex>` (batchFiles.ts): base62 has no `-`, so the two never meet.
 */

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
export const FILE_ID_CHARS = 24
const UPLOADED = /^file-[0-9A-Za-z]{24,64}$/

/** An id from random bytes (at least FILE_ID_CHARS of them), a byte a character: slightly biased, still over 140 bits. */
export const uploadedFileId = (random: Uint8Array): string => {
  let id = "file-"
  for (let i = 0; i < FILE_ID_CHARS; i++) id += ALPHABET[random[i]! % ALPHABET.length]
  return id
}

/** Whether an id can name an uploaded file: anything else is no uploaded file (and never a log subject token). */
export const isUploadedFileId = (id: string) => UPLOADED.test(id)
