/**
 * Hugging Face folder -> GGUF, as llama.cpp's convert_hf_to_gguf.py writes it: the plan (metadata
 * and tensor table) and each tensor's bytes. This module only re-exports.
 */
export { planHfToGguf, autoOuttype, HF_GGUF_OUTTYPES, type HfGgufOuttype, type HfGgufPlan, type HfGgufPlanOptions, type HfGgufTensor, type HfTensorHeader, type HfTensorPart, type HfFolderFiles, type HfTensorTransform, type GgufTensorType } from "./plan.js";
export { llama3Rope, llama3RopeFactors, type Llama3Rope } from "./rope.js";
export { encodeGenerated, encodeTensor, numpyHalfBits, sourceValues, transformValues } from "./encode.js";
export { HF_ARCHITECTURES, hfArchitectureOf, type HfArchitecture, type HfExperts } from "./architectures.js";
export { PRE_BY_REGEX, bpePreName, bpePreByRegex, type BpePreChoice } from "./vocab-bpe.js";
export { readSentencePieceModel, type SentencePiece } from "./vocab-spm.js";
