/**
 * What the page's hf-job.js holds (scripts/playground.mjs bundles it, taking every module the core
 * bundle already has from ./tensorcast.js): the Hugging Face folder job, the one tensorcast/node's
 * `convert DIR --to T` and `quantize DIR --mode PRESET` run (src/io/hf-gguf/folder.ts, a folder of
 * Blobs read by blob-folder.ts, written by quantize-job.ts's runGgufJob for a preset). The GGUF
 * panels' worker imports it as "tensorcast-hf-job" when a folder's job first comes; type-checked
 * here against the source.
 */
export { blobFolder } from "../../src/io/hf-gguf/blob-folder.js";
export { readHfFolderFiles, hfTensorHeaders, planHfFolder, writeHfGguf, hfGgufLayout, hfQuantizeJob } from "../../src/io/hf-gguf/folder.js";
export { runGgufJob } from "../../src/io/gguf/quantize-job.js";
