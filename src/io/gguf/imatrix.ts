/**
 * Importance matrices as llama-quantize reads them (common/imatrix-loader.cpp and
 * tools/quantize/quantize.cpp's load_imatrix): llama-imatrix's GGUF file (NAME.in_sum2 and
 * NAME.counts float32 tensors, imatrix.datasets / chunk_count / chunk_size) or its legacy .dat
 * (int32 entry count; per entry the name, ncall, nval and nval float32 values; then optionally
 * the chunk count and the dataset's name). Each tensor's weights are the sums divided by their
 * count (float32 arithmetic), 1 where a GGUF count is 0, and the metadata llama-quantize adds to
 * the output (quantize.imatrix.file, .dataset, .entries_count, .chunks_count) comes with them.
 *
 * Read from any ByteSource (no Node built-ins): tensorcast/node's readImatrixFile opens a path, the
 * playground's GGUF panel a picked File.
 */
import { TensorcastError } from "../../errors.js";
import type { ByteSource } from "../byte-source.js";
import { isGguf, readGguf } from "./header.js";
import { readGgufBlocks } from "./records.js";
import { ggufModel } from "./split.js";
import type { GgufMetadataEntry } from "./values.js";
import { utf8Decode, utf8Encode } from "../utf8.js";

export interface Imatrix {
  /** The weights by tensor name. */
  readonly weights: ReadonlyMap<string, Float32Array>;
  readonly datasets: readonly string[];
  readonly chunkCount: number;
  /** The pairs llama-quantize sets after general.file_type, `path` being the file as given on its command line. */
  metadata(path: string): GgufMetadataEntry[];
}

function bad(path: string, message: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `${path}: importance matrix: ${message}`);
}


/** strncpy(val_str, s, 127): llama_model_kv_override's 128-byte string. */
function clip127(s: string): string {
  const b = utf8Encode(s);
  return b.length <= 127 ? s : utf8Decode(b.subarray(0, 127), false);
}

function imatrix(weights: Map<string, Float32Array>, datasets: string[], chunkCount: number): Imatrix {
  return {
    weights, datasets, chunkCount,
    metadata(path) {
      const out: GgufMetadataEntry[] = [{ key: "quantize.imatrix.file", type: "string", value: clip127(path) }];
      if (datasets.length > 0) out.push({ key: "quantize.imatrix.dataset", type: "string", value: clip127(datasets[0]) });
      out.push({ key: "quantize.imatrix.entries_count", type: "uint32", value: weights.size });
      if (chunkCount > 0) out.push({ key: "quantize.imatrix.chunks_count", type: "uint32", value: chunkCount });
      return out;
    },
  };
}

/**
 * Reads the importance matrix in `source` (GGUF by its magic, else the legacy format, read whole:
 * a few MiB at most), `name` naming it in errors.
 * @throws TensorcastError INVALID_DATA for a file llama-quantize refuses (no entries, a GGUF one
 *         without its imatrix.* metadata, sums without counts, a truncated entry); what the source throws.
 */
export async function readImatrix(source: ByteSource, name: string): Promise<Imatrix> {
  const head = await source.read(0, Math.min(4, source.size));
  return isGguf(head) ? readGgufImatrix(name, source) : legacy(name, await source.read(0, source.size));
}

async function readGgufImatrix(path: string, file: ByteSource): Promise<Imatrix> {
  const g = await readGguf(file, { name: path });
  if (g.tensors.length < 1) throw bad(path, "no data in the file");
  const meta = (k: string) => g.metadata.get(k);
  const ds = meta("imatrix.datasets");
  if (ds === undefined || meta("imatrix.chunk_count") === undefined || meta("imatrix.chunk_size") === undefined) {
    throw bad(path, "missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size), which llama-quantize requires of a GGUF importance matrix");
  }
  const datasets = ds.type === "array" && (ds.value as { itemType: string }).itemType === "string" ? [...((ds.value as { items: readonly string[] }).items)] : [];
  const chunkCount = Number(meta("imatrix.chunk_count")!.value);
  const model = ggufModel([g], path);
  const pairs = new Map<string, { sums?: (typeof model.tensors)[number]; counts?: (typeof model.tensors)[number] }>();
  for (const t of model.tensors) {
    for (const suffix of [".in_sum2", ".counts"] as const) {
      if (t.name.endsWith(suffix) && t.name.length > 0) {
        const name = t.name.slice(0, -suffix.length);
        const p = pairs.get(name) ?? {};
        if (suffix === ".in_sum2") p.sums = t;
        else p.counts = t;
        pairs.set(name, p);
        break;
      }
    }
  }
  const weights = new Map<string, Float32Array>();
  for (const [name, p] of pairs) {
    if (!p.sums || !p.counts) throw bad(path, `mismatched sums and counts for ${name}`);
    if (p.sums.ggmlType.name !== "F32" || p.counts.ggmlType.name !== "F32") throw bad(path, `sums and counts for ${name} must be F32`);
    const read = async (t: NonNullable<typeof p.sums>): Promise<Float32Array> => {
      const b = await readGgufBlocks(model, t, 0, t.elements);
      return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    };
    const sums = await read(p.sums);
    const counts = await read(p.counts);
    if (counts.length === 0 || sums.length % counts.length !== 0) throw bad(path, `${name}: ${sums.length} sums are not ${counts.length} equal parts`);
    const ne0 = sums.length / counts.length;
    const w = new Float32Array(sums.length);
    for (let j = 0; j < counts.length; j++) {
      // std::lround, then back to float.
      const c = Math.fround(Math.sign(counts[j]) * Math.round(Math.abs(counts[j])));
      for (let i = 0; i < ne0; i++) w[j * ne0 + i] = c > 0 ? Math.fround(sums[j * ne0 + i] / c) : 1;
    }
    weights.set(name, w);
  }
  return imatrix(weights, datasets, chunkCount);
}

function legacy(path: string, b: Uint8Array): Imatrix {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let at = 0;
  const i32 = (what: string): number => {
    if (at + 4 > b.length) throw bad(path, `the file ends in ${what}`);
    const x = v.getInt32(at, true);
    at += 4;
    return x;
  };
  if (b.length < 4 || v.getInt32(0, true) < 1) throw bad(path, "no data in the file (neither GGUF nor a legacy .dat with entries)");
  const n = i32("the entry count");
  const weights = new Map<string, Float32Array>();
  for (let e = 0; e < n; e++) {
    const len = i32(`entry ${e + 1}'s name length`);
    if (len < 0 || at + len > b.length) throw bad(path, `failed reading the name of entry ${e + 1}`);
    const raw = b.subarray(at, at + len);
    at += len;
    const nul = raw.indexOf(0);
    const name = utf8Decode(nul >= 0 ? raw.subarray(0, nul) : raw, false);
    const ncall = i32(`entry ${e + 1}'s call count`);
    const nval = i32(`entry ${e + 1}'s value count`);
    if (nval < 1) throw bad(path, `failed reading the number of values of entry ${e + 1}`);
    if (at + 4 * nval > b.length) throw bad(path, `failed reading the data of entry ${e + 1}`);
    const w = new Float32Array(nval);
    const c = Math.fround(ncall);
    for (let i = 0; i < nval; i++) {
      const s = v.getFloat32(at + 4 * i, true);
      w[i] = ncall > 0 ? Math.fround(s / c) : s;
    }
    at += 4 * nval;
    weights.set(name, w);
  }
  let chunkCount = 0;
  const datasets: string[] = [];
  if (at < b.length) {
    if (at + 4 <= b.length) {
      chunkCount = v.getInt32(at, true);
      at += 4;
      if (at + 4 <= b.length) {
        const len = v.getInt32(at, true);
        at += 4;
        if (len > 0 && at + len <= b.length) {
          const raw = b.subarray(at, at + len);
          const nul = raw.indexOf(0);
          datasets.push(utf8Decode(nul >= 0 ? raw.subarray(0, nul) : raw, false));
        }
      }
    }
  }
  return imatrix(weights, datasets, chunkCount);
}
