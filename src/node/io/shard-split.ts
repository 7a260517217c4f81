/**
 * How a checkpoint's tensors are laid out in weights files when `--max-shard-size` asks for a new
 * layout: huggingface_hub's split_state_dict_into_shards_factory (which transformers'
 * save_pretrained calls), rule for rule.
 *
 * - The tensors are taken in order. One bigger than the limit gets a shard of its own, placed
 *   where it comes (before the shard still being filled); otherwise a new shard starts when the
 *   next tensor would take the current one over the limit (the limit itself is allowed).
 * - One shard: the file is `STEM.safetensors` and there is no index. More: `STEM-00001-of-00003.safetensors`
 *   ..., numbered from 1 with five digits, and an index `STEM.safetensors.index.json`.
 *
 * Sizes are tensor data bytes (what get_storage_size returns for a tensor of its own storage), not
 * file sizes: a shard's header comes on top.
 */
import { TensorcastError } from "../../index.js";
import { describe } from "../../args.js";

/**
 * The units `--max-shard-size` takes: huggingface_hub's parse_size_to_int (KB, MB, GB, TB as powers
 * of 10, which save_pretrained applies to a string) and transformers' convert_file_size_to_int's
 * binary ones (KiB, MiB, GiB: powers of 2); TiB for symmetry.
 */
const UNITS: Readonly<Record<string, number>> = {
  "": 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40,
};

/**
 * Parses a shard size as transformers' save_pretrained(max_shard_size=) takes one: a number of
 * bytes, or a number (decimals allowed, as huggingface_hub's `float(...)`) and a unit, case
 * insensitive, spaces between allowed; the bytes are truncated to an integer, as `int(value * multiplier)`.
 * "5Gb" is 5 GB, as huggingface_hub reads it (transformers' older reader took a lower-case b as bits).
 * @example parseShardSize("5GB") // 5000000000
 * @example parseShardSize("2GiB") // 2147483648
 * @example parseShardSize("0.5 MB") // 500000
 * @example parseShardSize("1048576") // 1048576
 * @throws TensorcastError INVALID_ATTRIBUTE naming the text and what is accepted.
 */
export function parseShardSize(text: string): number {
  if (typeof text !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `parseShardSize takes a string such as "5GB", got ${describe(text)}`);
  const m = /^(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]i?b)?$/i.exec(text.trim());
  const unit = m ? UNITS[(m[2] ?? "").toUpperCase()] : undefined;
  // A plain number is bytes, so it must be whole.
  const bytes = m && unit !== undefined && (m[2] !== undefined || /^\d+$/.test(m[1])) ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!(bytes >= 1) || !Number.isSafeInteger(bytes)) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `--max-shard-size ${JSON.stringify(text)} is not a size of at least 1 byte: a number of bytes, or a number and a unit ` +
        "(KB, MB, GB, TB = 10^3 .. 10^12 bytes, as save_pretrained reads them; KiB, MiB, GiB, TiB = 2^10 .. 2^40), such as 5GB, 500MB or 2GiB",
    );
  }
  return bytes;
}

/** What is laid out: one or more tensors that go into one file together, and their data bytes. */
export interface ShardItem {
  /** The tensors written, in order (a quantized weight with its scales: never split apart). */
  readonly names: readonly string[];
  readonly bytes: number;
}

/** One weights file of a layout: its name and the items it holds, in order. */
export interface PlannedShard<T extends ShardItem = ShardItem> {
  readonly name: string;
  readonly items: readonly T[];
}

/** How a checkpoint is named: "model" gives model.safetensors, model-00001-of-00002.safetensors and model.safetensors.index.json. */
export function stemOf(indexName: string): string {
  return indexName.endsWith(".safetensors.index.json") ? indexName.slice(0, -".safetensors.index.json".length) : indexName.replace(/\.safetensors$/, "");
}

/**
 * The files `items` are written to under a limit of `maxBytes` per file (see the file comment).
 * @example splitShards([{ names: ["a"], bytes: 6 }, { names: ["b"], bytes: 6 }, { names: ["c"], bytes: 2 }], 10, "model").map((s) => s.name)
 * // ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]: [a], [b, c]
 * @example splitShards([{ names: ["a"], bytes: 6 }], 10, "model")[0].name // "model.safetensors"
 */
export function splitShards<T extends ShardItem>(items: readonly T[], maxBytes: number, stem: string): PlannedShard<T>[] {
  const groups: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    if (item.bytes > maxBytes) {
      groups.push([item]);
      continue;
    }
    if (size + item.bytes > maxBytes) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += item.bytes;
  }
  // huggingface_hub keeps the last shard only when it holds a tensor; with none at all, one empty file.
  if (current.length > 0 || groups.length === 0) groups.push(current);
  const n = groups.length;
  const digits = (k: number): string => String(k).padStart(5, "0");
  return groups.map((g, i) => ({ name: n === 1 ? `${stem}.safetensors` : `${stem}-${digits(i + 1)}-of-${digits(n)}.safetensors`, items: g }));
}
