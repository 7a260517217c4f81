/**
 * safetensors read with no Node built-ins, from any ByteSource (a page's File, bytes in memory):
 * the header checked as huggingface/safetensors' Rust reader checks it, and tensors read in runs.
 * This module only re-exports. It is not a package subpath yet: the playground bundles it beside
 * the core (scripts/playground.mjs), and tensorcast/node reads files on disk with the same header code.
 */
export {
  MAX_HEADER_LENGTH, SAFETENSORS_DTYPES, safetensorsCode, readHeaderLength, parseSafetensorsHeader,
  type SafetensorsTensor, type SafetensorsHeader,
} from "./header.js";
export { readSafetensors, readSafetensorsElements, type SafetensorsFile } from "./read.js";
export { bytesSource, blobSource, type ByteSource, type BlobLike } from "../byte-source.js";
