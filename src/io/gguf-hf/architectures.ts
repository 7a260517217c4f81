/**
 * The architectures a GGUF file can be turned back into a Hugging Face folder for, and how
 * transformers names them. llama.cpp writes Mistral models as `llama`, and transformers loads
 * them as Llama; so do we.
 */
import { TensorcastError } from "../../errors.js";
import { getNumber, getString, type GgufMetadata } from "./metadata.js";

/** GGUF `general.architecture` values we convert. */
export const GGUF_HF_ARCHITECTURES = ["llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"] as const;
export type GgufHfArchitecture = (typeof GGUF_HF_ARCHITECTURES)[number];

/** The architecture of a file, or UNSUPPORTED_TYPE naming it and the ones we convert. */
export function architectureOf(meta: GgufMetadata): GgufHfArchitecture {
  const arch = getString(meta, "general.architecture");
  if (arch === undefined) {
    throw new TensorcastError("INVALID_DATA", "GGUF metadata has no general.architecture");
  }
  if (!(GGUF_HF_ARCHITECTURES as readonly string[]).includes(arch)) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `GGUF architecture "${arch}" cannot be converted to a Hugging Face folder; supported: ${GGUF_HF_ARCHITECTURES.join(", ")} (Mistral files are "llama")`,
    );
  }
  // A mixture of experts (Mixtral is "llama" with experts) would come out as a dense model
  // without its expert tensors, which transformers would load as a broken Llama.
  const experts = getNumber(meta, `${arch}.expert_count`);
  if (experts !== undefined && experts > 0) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `GGUF model "${arch}" with ${experts} experts (${arch}.expert_count) cannot be converted to a Hugging Face folder: mixtures of experts are not mapped back; dense ${GGUF_HF_ARCHITECTURES.join(", ")} models are`,
    );
  }
  return arch as GgufHfArchitecture;
}

/** transformers' model_type and model class for each architecture. */
export const HF_MODEL: Record<GgufHfArchitecture, { readonly modelType: string; readonly className: string }> = {
  llama: { modelType: "llama", className: "LlamaForCausalLM" },
  qwen2: { modelType: "qwen2", className: "Qwen2ForCausalLM" },
  qwen3: { modelType: "qwen3", className: "Qwen3ForCausalLM" },
  gemma2: { modelType: "gemma2", className: "Gemma2ForCausalLM" },
  // a GGUF holds only Gemma 3's text model
  gemma3: { modelType: "gemma3_text", className: "Gemma3ForCausalLM" },
  phi3: { modelType: "phi3", className: "Phi3ForCausalLM" },
};
