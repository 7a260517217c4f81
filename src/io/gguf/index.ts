/**
 * GGUF, llama.cpp's model format, read from any ByteSource (a Node file, a Blob or File in a
 * page, bytes in memory). This module only re-exports.
 */
export { readGguf, isGguf, ggufValue, GGUF_VERSIONS, GGUF_DEFAULT_ALIGNMENT, type GgufFile, type ReadGgufOptions } from "./header.js";
export { GGUF_VALUE_TYPES, GGUF_MAX_ARRAY_ELEMENTS, GGUF_MAX_ARRAY_DEPTH, type GgufValueType, type GgufValue, type GgufArray, type GgufNumbers, type GgufMetadataEntry } from "./values.js";
export { GGUF_MAX_STRING_LENGTH } from "./cursor.js";
export { GGML_MAX_NAME, GGML_MAX_DIMS, type GgufTensorInfo } from "./tensor-info.js";
export { ggufModel, splitNameOf, splitPaths, splitCountOf, type GgufModel, type GgufModelTensor } from "./split.js";
export { ggufRecords, readGgufBlocks, ggufTensor, type GgufRecord } from "./records.js";
export { writeGguf, layoutGguf, ggmlDims, type GgufSink, type GgufLayout, type GgufLayoutOptions, type GgufTensorSpec, type GgufTensorToWrite, type GgufTensorData } from "./write.js";
