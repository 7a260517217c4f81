/**
 * A converted checkpoint folder's config.json says the new type: its torch_dtype / dtype keys
 * (io/hf-config.ts says which) are set to it when every floating-point tensor of the checkpoint
 * has it afterwards and transformers can load weights of that type (float16, bfloat16, float32,
 * float64); otherwise the file is copied as it is and the report says why.
 *
 * Which tensors end up in which type follows from the index's tensor list and the options alone
 * (convertFile's name filters; every floating-point tensor a filter lets through becomes `to`),
 * so slice 0 of a `--shard K/N` run, which copies config.json, decides for the whole checkpoint,
 * assuming every slice runs with the same --only / --skip / --initializers.
 */
import { promises as fsp } from "node:fs";
import { dtype, type DType, type DTypeName } from "../../index.js";
import type { Checkpoint } from "../io/checkpoint.js";
import { configDtypeKeys, retypeConfig } from "../io/hf-config.js";
import { nameFilterReason, type ConvertOptions } from "./convert.js";

/** The file whose keys are rewritten. */
export const CONFIG_NAME = "config.json";
/** Configs are kilobytes; a larger one is copied as it is, unread. */
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;
/** The types transformers loads a checkpoint in (a torch_dtype it accepts). */
const LOADABLE: readonly DTypeName[] = ["float16", "bfloat16", "float32", "float64"];

/** What happened to config.json's data-type keys. */
export interface ConfigReport {
  /** The file in the output folder. */
  file: string;
  /** The data-type keys that named another type than the new one, with the value they had. */
  keys: { key: string; was: string }[];
  /** Whether they now name the new type. */
  updated: boolean;
  /** Why not, when they were left as they were. */
  reason?: string;
}

/**
 * config.json's new bytes (undefined: copy it as it is) and the report (undefined when it names no
 * floating-point type other than `to`).
 * @example await retypedConfig("Llama/config.json", checkpoint, { to: "bfloat16" }) // { bytes, report: { keys: [{ key: "torch_dtype", was: "float32" }], updated: true, ... } }
 */
export async function retypedConfig(path: string, c: Checkpoint, opts: ConvertOptions): Promise<{ bytes?: Uint8Array; report?: ConfigReport }> {
  const to = dtype(opts.to);
  const stat = await fsp.stat(path);
  if (stat.size > MAX_CONFIG_BYTES) return { report: { file: CONFIG_NAME, keys: [], updated: false, reason: `it is ${stat.size} bytes, over the ${MAX_CONFIG_BYTES} read for a config` } };
  let text: string;
  let keys: ReturnType<typeof configDtypeKeys>;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(await fsp.readFile(path));
    keys = configDtypeKeys(text);
  } catch (e) {
    return { report: { file: CONFIG_NAME, keys: [], updated: false, reason: `it is not UTF-8 JSON (${(e as Error).message.slice(0, 80)})` } };
  }
  const stale = keys.filter((k) => k.value !== to.name);
  if (stale.length === 0) return {};
  const report = { file: CONFIG_NAME, keys: stale.map((k) => ({ key: k.key, was: k.value })) };
  const reason = keptBecause(c, opts, to);
  if (reason) return { report: { ...report, updated: false, reason } };
  return { bytes: new TextEncoder().encode(retypeConfig(text, stale, to.name)), report: { ...report, updated: true } };
}

/** Why the config may not say `to`, or undefined when every floating-point tensor is `to` afterwards. */
function keptBecause(c: Checkpoint, opts: ConvertOptions, to: DType): string | undefined {
  if (!LOADABLE.includes(to.name)) return `transformers loads weights as ${LOADABLE.join(", ")}, not ${to.name}`;
  const names = opts.names ? new Set(opts.names) : undefined;
  const others: string[] = [];
  for (const t of c.tensors.flat()) {
    const type = dtype(t.dtype);
    if (type.kind !== "float" || type === to) continue;
    const why = nameFilterReason(t.name, opts, names);
    if (why) others.push(`${t.name}, ${type.name} (${why})`);
  }
  if (others.length === 0) return undefined;
  const shown = others.slice(0, 3).join("; ");
  return `${others.length} floating-point tensor${others.length === 1 ? " stays" : "s stay"} in another type than ${to.name}: ${shown}${others.length > 3 ? "; ..." : ""}`;
}
