/**
 * Writing one model as several GGUF files (split.ts reads them back as one): which tensors go in
 * which part, and each part's metadata.
 *
 * Two tools make split models, with rules of their own:
 * - gguf-py's GGUFWriter (convert_hf_to_gguf.py's --split-max-tensors / --split-max-size): a tensor
 *   opens a new part when the current one already holds `maxTensors` tensors or when its bytes
 *   (unpadded) would take the part's tensor bytes past `maxBytes`; both limits may be set; a part
 *   never stays without a tensor because of them, so one tensor over the size is a part alone.
 * - llama-gguf-split (--split-max-tensors, default 128, or --split-max-size): one limit at a time;
 *   by count, a new part at every multiple of `maxTensors`; by size, a new part whenever the sizes
 *   padded to 32 bytes would pass `maxBytes`, even before the first tensor (so the first part can
 *   be left with metadata only).
 * With either, `firstWithoutTensors` (--no-tensor-first-split) keeps the first part for metadata.
 *
 * Every part has split.no (uint16, 0-based), split.count (uint16) and split.tensors.count (int32,
 * the model's total); the first part has the model's metadata before them (an existing split.* key
 * is moved to the end, as gguf.cpp's gguf_set_val removes and appends), the others only these.
 */
import { describe } from "../../args.js";
import { TensorcastError } from "../../errors.js";
import { GGUF_DEFAULT_ALIGNMENT } from "./header.js";
import { splitPaths } from "./split.js";
import type { GgufMetadataEntry } from "./values.js";

/** At most this many parts: split.no and split.count are uint16, the names have five digits. */
export const GGUF_MAX_SPLITS = 99999;

export interface GgufSplitLimits {
  /** At most this many tensors per part (0 or absent: no limit). */
  readonly maxTensors?: number;
  /** At most this many bytes of tensor data per part (0 or absent: no limit). */
  readonly maxBytes?: number;
  /** The first part holds the metadata and no tensor. */
  readonly firstWithoutTensors?: boolean;
}

function checkLimits(l: GgufSplitLimits): void {
  for (const [what, v] of [["maxTensors", l.maxTensors], ["maxBytes", l.maxBytes]] as const) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `GGUF split: ${what} must be a count of 0 or more, not ${describe(v)}`);
    }
  }
}

function checked(parts: number[][]): number[][] {
  if (parts.length > GGUF_MAX_SPLITS) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `GGUF split: the limits make ${parts.length} parts; split.count is a uint16 and the names take at most ${GGUF_MAX_SPLITS}`);
  }
  return parts;
}

/**
 * The tensors of each part (indices into `byteLengths`, in order) by gguf-py's rule.
 * @example splitByGgufPy([10, 10, 10], { maxTensors: 2 }) // [[0, 1], [2]]
 */
export function splitByGgufPy(byteLengths: readonly number[], limits: GgufSplitLimits): number[][] {
  checkLimits(limits);
  const maxTensors = limits.maxTensors ?? 0;
  const maxBytes = limits.maxBytes ?? 0;
  const parts: number[][] = limits.firstWithoutTensors ? [[], []] : [[]];
  let bytes = 0;
  byteLengths.forEach((n, i) => {
    const last = parts[parts.length - 1];
    if (last.length > 0 && ((maxTensors !== 0 && last.length >= maxTensors) || (maxBytes !== 0 && bytes + n > maxBytes))) {
      parts.push([]);
      bytes = 0;
    }
    parts[parts.length - 1].push(i);
    bytes += n;
  });
  return checked(parts);
}

/**
 * The tensors of each part by llama-gguf-split's rule: by count (`maxTensors`, its default 128)
 * unless `maxBytes` is given, then by size.
 * @example splitByGgufSplit([10, 10, 10], { maxTensors: 2 }) // [[0, 1], [2]]
 */
export function splitByGgufSplit(byteLengths: readonly number[], limits: GgufSplitLimits): number[][] {
  checkLimits(limits);
  if (limits.maxTensors !== undefined && limits.maxBytes !== undefined) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "GGUF split: llama-gguf-split splits by tensor count or by size, not both");
  }
  const bySize = limits.maxBytes !== undefined;
  const maxTensors = limits.maxTensors ?? 128;
  if ((bySize ? limits.maxBytes : maxTensors) === 0) throw new TensorcastError("INVALID_ATTRIBUTE", "GGUF split: llama-gguf-split's limit must be at least 1");
  const parts: number[][] = limits.firstWithoutTensors ? [[], []] : [[]];
  let bytes = 0;
  byteLengths.forEach((n, i) => {
    const padded = Math.ceil(n / GGUF_DEFAULT_ALIGNMENT) * GGUF_DEFAULT_ALIGNMENT;
    const split = bySize ? bytes + padded > limits.maxBytes! : i > 0 && i % maxTensors === 0;
    if (split) {
      parts.push([]);
      bytes = padded;
    } else bytes += padded;
    parts[parts.length - 1].push(i);
  });
  return checked(parts);
}

/** The split.* keys of part `no` (0-based) of `count`. */
function splitKeys(no: number, count: number, tensors: number): GgufMetadataEntry[] {
  return [
    { key: "split.no", type: "uint16", value: no },
    { key: "split.count", type: "uint16", value: count },
    { key: "split.tensors.count", type: "int32", value: tensors },
  ];
}

/**
 * The metadata of part `no` (0-based) of `count`: the model's and the split keys in the first,
 * the split keys alone in the others. One part is the model's metadata unchanged.
 * @example splitMetadata(meta, 1, 3, 20) // split.no 1, split.count 3, split.tensors.count 20
 */
export function splitMetadata(metadata: readonly GgufMetadataEntry[], no: number, count: number, tensors: number): GgufMetadataEntry[] {
  if (!Number.isInteger(count) || count < 1 || count > GGUF_MAX_SPLITS || !Number.isInteger(no) || no < 0 || no >= count) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `GGUF split: part ${describe(no)} of ${describe(count)}: parts are numbered 0 to count - 1, count 1 to ${GGUF_MAX_SPLITS}`);
  }
  if (count === 1) return [...metadata];
  const keys = splitKeys(no, count, tensors);
  if (no > 0) return keys;
  const mine = new Set(keys.map((k) => k.key));
  return [...metadata.filter((e) => !mine.has(e.key)), ...keys];
}

/**
 * The file names of a model written in `count` parts: OUT itself for one part (unless `always`:
 * llama-quantize --keep-split names even one part so), else `PREFIX-0000K-of-0000N.gguf` with
 * PREFIX OUT without its .gguf (as llama-quantize and gguf-py name them).
 * @example splitOutputPaths("m.gguf", 2) // ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]
 */
export function splitOutputPaths(output: string, count: number, always = false): string[] {
  if (count === 1 && !always) return [output];
  const prefix = output.toLowerCase().endsWith(".gguf") ? output.slice(0, -5) : output;
  return splitPaths(prefix, count);
}

/**
 * A size as convert_hf_to_gguf.py reads --split-max-size: digits, optionally followed by K, M or G
 * (powers of 1000).
 * @example parseSplitSize("5G") // 5000000000
 */
export function parseSplitSize(text: string): number {
  const m = /^(\d+)([KMG]?)$/.exec(text);
  const n = m ? Number(m[1]) * { "": 1, K: 1e3, M: 1e6, G: 1e9 }[m[2] as "" | "K" | "M" | "G"] : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `a split size is digits, optionally followed by K, M or G (1000s), such as 2G or 500M; got ${JSON.stringify(text)}`);
  }
  return n;
}
