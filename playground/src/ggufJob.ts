/**
 * What the page's gguf-job.js holds (scripts/playground.mjs bundles it, taking every module the
 * core bundle already has from ./tensorcast.js): the GGUF reader, llama-quantize's presets, the
 * importance matrix reader and the core's quantization job (src/io/gguf/quantize-job.ts, the one tensorcast/node's `quantize` runs),
 * and the Hugging Face folder job (src/io/hf-gguf/folder.ts and blob-folder.ts, the ones `convert DIR --to T` and
 * `quantize DIR --mode PRESET` run).
 * The GGUF panel's workers (the job's and the band workers, which run quantizeBand) import it as
 * "tensorcast-gguf-job", and the panel itself for the preset names, all only once the panel is
 * used; type-checked here against the source.
 */
export { readGguf, ggufModel, blobSource } from "../../src/gguf/index.js";
export { LLAMA_PRESETS } from "../../src/ggml/presets.js";
export { quantizeGgufModel, runGgufJob, type Band } from "../../src/io/gguf/quantize-job.js";
export { readHfFolderFiles, hfTensorHeaders, planHfFolder, writeHfGguf, hfGgufLayout, hfQuantizeJob } from "../../src/io/hf-gguf/folder.js";
export { blobFolder } from "../../src/io/hf-gguf/blob-folder.js";
export { quantizeBand } from "../../src/io/gguf/quantize-band.js";
export { ggmlType } from "../../src/ggml/types.js";
export { readImatrix } from "../../src/io/gguf/imatrix.js";
