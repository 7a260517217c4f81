export { bpeTokenizerFromJson, BYTE_CHARS, type BpeTokenizer } from "./bpe.js";
export { onigurumaRegExp, onigurumaToJs } from "./regex.js";
export { CHECK_TEXT, PRE_BY_HASH } from "./pre-hashes.js";
export { sha256Hex } from "./sha256.js";
export { checkHash } from "./check-hash.js";
