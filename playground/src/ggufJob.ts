/**
 * What the page's gguf-job.js holds (scripts/playground.mjs bundles it, taking every module the
 * core bundle already has from ./tensorcast.js): the GGUF reader, llama-quantize's presets and the
 * core's quantization job (src/io/gguf/quantize-job.ts, the one tensorcast/node's `quantize` runs).
 * The GGUF panel's worker imports it as "tensorcast-gguf-job", and the panel itself for the preset
 * names, both only once the panel is used; type-checked here against the source.
 */
export { readGguf, ggufModel, blobSource } from "../../src/gguf/index.js";
export { LLAMA_PRESETS } from "../../src/ggml/presets.js";
export { quantizeGgufModel } from "../../src/io/gguf/quantize-job.js";
