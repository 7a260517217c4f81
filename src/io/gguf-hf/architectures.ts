/**
 * The architectures a GGUF file can be turned back into a Hugging Face folder for, and how
 * transformers names them. llama.cpp writes Mistral models as `llama`, and transformers loads
 * them as Llama; so do we.
 */
import { TensorcastError } from "../../errors.js";
import { getString, type GgufMetadata } from "./metadata.js";

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
