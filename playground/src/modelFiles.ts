/**
 * What the page's model-files.js holds (scripts/playground.mjs bundles it, taking every module the
 * core bundle already has from ./tensorcast.js): the GGUF and safetensors readers. The page imports
 * it as "tensorcast-model-files" when a model file is first opened; type-checked here against the source.
 */
export { readGguf, ggufModel, readGgufBlocks, blobSource } from "../../src/gguf/index.js";
export { readSafetensors, readSafetensorsElements } from "../../src/io/safetensors/index.js";
