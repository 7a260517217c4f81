/**
 * The plan for a GGUF model as the core reader (src/io/gguf) reads it: its typed metadata made
 * into the plain values the plan reads (arrays as their items), its tensor table as it is.
 */
import type { GgufModel } from "../gguf/split.js";
import type { GgufArray, GgufValue as ReaderValue } from "../gguf/values.js";
import type { HfConfigOptions } from "./config.js";
import type { GgufValue } from "./metadata.js";
import { ggufToHf, type HfPlan } from "./plan.js";

function plainValue(v: ReaderValue): GgufValue {
  if (typeof v !== "object") return v;
  return plainArray(v);
}

function plainArray(a: GgufArray): GgufValue {
  const items = a.items;
  if (items instanceof BigInt64Array || items instanceof BigUint64Array) return Array.from(items);
  if (ArrayBuffer.isView(items)) return items as ArrayLike<number>;
  if (items.length > 0 && typeof items[0] === "object") return (items as readonly GgufArray[]).map(plainArray);
  return items as readonly string[];
}

/** ggufToHf for a model the core reader (readGguf / ggufModel) or openGguf's `model` read. */
export function ggufModelToHf(model: GgufModel, options: HfConfigOptions = {}): HfPlan {
  const meta = new Map<string, GgufValue>();
  for (const [k, e] of model.metadata) meta.set(k, plainValue(e.value));
  return ggufToHf(meta, model.tensors, options);
}
