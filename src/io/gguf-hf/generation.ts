/**
 * generation_config.json as save_pretrained writes it for a model whose config holds the generation
 * settings (GenerationConfig.from_model_config): the config's token ids that are set, use_cache,
 * and PreTrainedConfig's output_* flags, which a GGUF never changes from false.
 */
import type { JsonObject } from "./config.js";
import { toJsonText, type OrderedJson } from "./json.js";

const TOKEN_IDS = ["bos_token_id", "eos_token_id", "pad_token_id"] as const;

export function generationConfigText(config: JsonObject): string {
  const o: Record<string, OrderedJson> = {
    _from_model_config: true,
    output_attentions: false,
    output_hidden_states: false,
    transformers_version: config.transformers_version as string,
    use_cache: (config.use_cache as boolean | undefined) ?? true,
  };
  // None is left out, so GenerationConfig's own default (unset) holds
  for (const k of TOKEN_IDS) if (config[k] !== null && config[k] !== undefined) o[k] = config[k] as OrderedJson;
  return toJsonText(new Map(Object.keys(o).sort().map((k) => [k, o[k]!])), true);
}
