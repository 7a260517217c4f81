export { ggufToHf, type HfPlan, type HfTensorPlan } from "./plan.js";
export { applyTransform, type TensorTransform } from "./transforms.js";
export { GGUF_HF_ARCHITECTURES, type GgufHfArchitecture } from "./architectures.js";
export { MATCHED_TRANSFORMERS_VERSION, type HfConfigOptions, type JsonObject, type JsonValue } from "./config.js";
export type { GgufMetadata, GgufTensorInfo, GgufValue } from "./metadata.js";
export { ggufModelToHf } from "./model.js";
export { generationConfigText } from "./generation.js";
