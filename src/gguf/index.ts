/**
 * tensorcast/gguf: llama.cpp's GGUF models read with no Node built-ins (browsers, Bun, Deno), from
 * any ByteSource: `blobSource(file)` for a page's File, `bytesSource(bytes)` for bytes in memory
 * (tensorcast/node's readGgufFile takes a path). The metadata, the tensor infos with row-major
 * shapes, and the tensors as records whose blocks src/ggml dequantizes bit for bit as ggml does.
 * A subpath of its own, as tensorcast/onnx is, so pages that only cast tensors do not carry it.
 *
 * @example
 * import { blobSource, readGguf, ggufModel, ggufRecords, ggufTensor } from "tensorcast/gguf";
 * const model = ggufModel([await readGguf(blobSource(file), { name: file.name })]);
 * for await (const r of ggufRecords(model)) ggufTensor(r, "bfloat16");  // float32 by ggml's rule, then one rounding
 * quantizeRows("Q4_K", rows, 4096);  // ggml_quantize_chunk's bytes
 */
export type { ByteSource, BlobLike } from "../io/byte-source.js";
export * from "../io/gguf/index.js";
// The checked functions, declared after the star export: a local export wins over a star one.
export {
  bytesSource, blobSource, readGguf, isGguf, ggufValue, ggufModel, splitNameOf, splitPaths, splitCountOf,
  ggufRecords, readGgufBlocks, ggufTensor, layoutGguf, writeGguf, ggmlDims, ggmlRowBytes, canQuantize,
} from "./checked.js";
export {
  GGML_TYPES, REMOVED_GGML_TYPES, ggmlType, ggmlTypeOfId, dequantizeGgml, quantizeRows, quantizeRowsInto, quantizableTypes,
  type GgmlType, type GgmlTypeName, type GgmlField, type GgmlFieldKind,
} from "../ggml/index.js";
