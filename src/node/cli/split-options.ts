/**
 * The --split-max-size / --split-max-tensors / --no-tensor-first-split options of the GGUF
 * writers, read as the tool whose rule they follow reads them: convert_hf_to_gguf.py's (gguf-py:
 * both limits may be given, 0 is no limit) for `convert DIR`, llama-gguf-split's (one limit, at
 * least 1) for `quantize`.
 */
import { parseSplitSize, type GgufSplitLimits } from "../../io/gguf/split-write.js";
import { UsageError } from "./usage.js";

export interface SplitOptionValues {
  readonly size?: string;
  readonly tensors?: string;
  readonly noTensorFirstSplit?: boolean;
}

/** The limits the options give, or undefined for one file. */
export function splitLimitsOption(o: SplitOptionValues, rule: "gguf-py" | "gguf-split", command: string): GgufSplitLimits | undefined {
  const one = rule === "gguf-split";
  if (one && o.size !== undefined && o.tensors !== undefined) throw new UsageError("--split-max-size and --split-max-tensors: llama-gguf-split splits by one of them; give one", command);
  let maxBytes: number | undefined;
  let maxTensors: number | undefined;
  if (o.size !== undefined) {
    try {
      maxBytes = parseSplitSize(o.size);
    } catch (e) {
      throw new UsageError(`--split-max-size: ${(e as Error).message}`, command);
    }
    if (one && maxBytes === 0) throw new UsageError("--split-max-size must be at least 1 byte", command);
  }
  if (o.tensors !== undefined) {
    if (!/^\d{1,9}$/.test(o.tensors) || (one && Number(o.tensors) === 0)) {
      throw new UsageError(`--split-max-tensors takes a number of tensors${one ? " (1 or more)" : ""}, got ${JSON.stringify(o.tensors)}`, command);
    }
    maxTensors = Number(o.tensors);
  }
  // gguf-py's 0 is no limit; --no-tensor-first-split alone splits off the metadata.
  if (!maxBytes && !maxTensors && o.noTensorFirstSplit !== true) return undefined;
  return { maxBytes: maxBytes || undefined, maxTensors: maxTensors || undefined, firstWithoutTensors: o.noTensorFirstSplit === true };
}
