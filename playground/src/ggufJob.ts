/**
 * What the page's gguf-job.js holds (scripts/playground.mjs bundles it, taking every module the
 * core bundle already has from ./tensorcast.js): the GGUF reader, llama-quantize's presets, the
 * importance matrix reader and the core's quantization job (src/io/gguf/quantize-job.ts, the one tensorcast/node's `quantize` runs).
 * The GGUF panel's workers (the job's and the band workers, which run quantizeBand) import it as
 * "tensorcast-gguf-job", and the panel itself for the preset names, all only once the panel is
 * used; type-checked here against the source.
 */
export { readGguf, ggufModel, blobSource } from "../../src/gguf/index.js";
export { LLAMA_PRESETS } from "../../src/ggml/presets.js";
export { quantizeGgufModel, type Band } from "../../src/io/gguf/quantize-job.js";
export { quantizeBand } from "../../src/io/gguf/quantize-band.js";
export { ggmlType } from "../../src/ggml/types.js";
export { readImatrix } from "../../src/io/gguf/imatrix.js";
