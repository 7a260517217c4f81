/**
 * `convertGgufToHf(model.gguf, OUTDIR, { to })`: the Hugging Face folder transformers writes with
 * `from_pretrained(DIR, gguf_file=...)` (dtype TO) then `save_pretrained(OUTDIR)`:
 * model.safetensors (or numbered shards and model.safetensors.index.json past maxShardSize),
 * config.json, generation_config.json and the tokenizer files of the plan (src/io/gguf-hf).
 *
 * Each tensor is read from the GGUF as transformers loads it (node/io/gguf-hf.ts: dequantized
 * float32, transform applied in float32), then cast once to TO by convertOpenFile's pipeline: the
 * same chunks, worker threads and read-back check as any safetensors conversion, so memory is
 * bounded by the chunks in flight (2 x chunkBytes per thread, plus for an un-permuted Q/K tensor
 * the whole heads a chunk's rows fall in), never by the model.
 *
 * The folder is built under a hidden temporary name beside OUTDIR, each file read back (the index
 * with every shard's header), then renamed to OUTDIR: an interrupted run leaves no OUTDIR.
 */
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { dtype, TensorcastError, type DTypeName } from "../../index.js";
import type { GgufHfArchitecture } from "../../io/gguf-hf/architectures.js";
import type { TensorTransform } from "../../io/gguf-hf/transforms.js";
import { checkCheckpoint, DEFAULT_INDEX_NAME, encodeIndex } from "../io/checkpoint.js";
import { AtomicOutput, fileError, removeStaleTemporaries } from "../io/file.js";
import { forgetAtExit } from "../io/exit-cleanup.js";
import { ggufHfView, hfTensorFile, type GgufHfTensor } from "../io/gguf-hf.js";
import { openGguf } from "../io/gguf.js";
import { inputFilesOf } from "../io/input-files.js";
import { splitShards, stemOf } from "../io/shard-split.js";
import { rawByteLength } from "../io/tensors.js";
import { convertOpenFile, defaultJobs, inThreadOnly, type ConvertReport } from "./convert.js";
import { TaskPool } from "./pool.js";
import { Interrupted } from "./schedule.js";
import { checkOutputFolder, commitFolder, makeBuildingFolder } from "./sharded.js";
import { expectOptionsObject, expectPath } from "../args.js";
import { expectInteger } from "../../args.js";

/** The types transformers saves a GGUF-loaded model in (its `dtype=`); float32 is its default. */
export const GGUF_HF_TYPES = ["float32", "bfloat16", "float16"] as const;
export type GgufHfType = (typeof GGUF_HF_TYPES)[number];

/** save_pretrained's default max_shard_size in transformers 5 ("50GB", powers of 10). */
export const SAVE_PRETRAINED_MAX_SHARD_SIZE = 50e9;

export interface GgufToHfOptions {
  /** The safetensors' type (default float32, what transformers loads a GGUF as without dtype=). */
  to?: GgufHfType;
  /** At most this many bytes of tensor data per file (default SAVE_PRETRAINED_MAX_SHARD_SIZE). */
  maxShardSize?: number;
  /** Replace an existing OUTDIR that holds a checkpoint's files and nothing but regular files. */
  force?: boolean;
  jobs?: number;
  chunkBytes?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface GgufHfTensorReport {
  /** transformers' name. */
  name: string;
  /** The GGUF tensor and its GGML type. */
  from: string;
  ggmlType: string;
  shape: number[];
  transform: TensorTransform["kind"];
}

export interface GgufToHfReport {
  input: string;
  output: string;
  architecture: GgufHfArchitecture;
  to: DTypeName;
  /** The weights files, in order. */
  files: string[];
  /** model.safetensors.index.json when there are several files. */
  indexName?: string;
  /** The index's total_size and total_parameters (also given for one file). */
  totalSize: number;
  totalParameters: number;
  /** config.json, generation_config.json, the tokenizer files. */
  written: string[];
  tensors: GgufHfTensorReport[];
  /** GGUF tensors transformers has no place for (rope_freqs, ...). */
  skipped: string[];
  /** One per weights file: each tensor's cast from the dequantized float32, with its errors. */
  shards: ConvertReport[];
  bytesIn: number;
  bytesOut: number;
  seconds: number;
  workers: number;
}

/** OUTDIR without trailing slashes. */
function folderName(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed === "" && path !== "" ? "/" : trimmed;
}

/** Writes a small file whole through an AtomicOutput, reads it back byte for byte, and renames it. */
async function writeChecked(path: string, bytes: Uint8Array): Promise<void> {
  const out = await AtomicOutput.create(path, { digests: true });
  try {
    await out.write(bytes, 0);
    await out.finish(bytes.length);
    const differs = await out.checkWritten();
    if (differs !== undefined) throw new TensorcastError("INTERNAL", `${path}: did not read back as written (${differs})`);
    await out.commit(false);
  } catch (e) {
    await out.abort();
    throw e;
  }
}

/**
 * Converts the GGUF model `input` (a split one's parts found beside it) into the folder `outDir`.
 * @throws TensorcastError UNSUPPORTED_TYPE for an architecture the plan does not convert (naming
 *         the supported ones) or a type other than GGUF_HF_TYPES; INVALID_ATTRIBUTE for an OUTDIR
 *         that exists and is not empty (without `force`) or is not a folder; OUTPUT_IS_INPUT for
 *         an OUTDIR holding the GGUF; INVALID_DATA for a bad GGUF; `Interrupted` when `signal` aborts.
 */
export async function convertGgufToHf(input: string, outDir: string, opts: GgufToHfOptions = {}): Promise<GgufToHfReport> {
  expectPath(input, "convertGgufToHf's input");
  expectPath(outDir, "convertGgufToHf's output folder");
  expectOptionsObject(opts, "convertGgufToHf");
  const started = performance.now();
  const toName = opts.to ?? "float32";
  if (!(GGUF_HF_TYPES as readonly string[]).includes(toName)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `a GGUF model is written as a Hugging Face folder in ${GGUF_HF_TYPES.join(", ")} (transformers' dtype=); got ${String(toName)}`);
  }
  const to = dtype(toName);
  const maxShardSize = opts.maxShardSize ?? SAVE_PRETRAINED_MAX_SHARD_SIZE;
  expectInteger(maxShardSize, "convertGgufToHf's maxShardSize", 1, Number.MAX_SAFE_INTEGER, "INVALID_ATTRIBUTE");
  const out = folderName(outDir);
  const force = opts.force ?? false;
  const gguf = await openGguf(input);
  let building: string | undefined;
  let pool: TaskPool | undefined;
  try {
    const view = ggufHfView(gguf, { dtype: toName });
    const inputs = await inputFilesOf(gguf);
    const replace = await checkOutputFolder(out, input, force, inputs);

    const items = view.tensors.map((t) => ({ names: [t.name], bytes: rawByteLength(to, t.size), tensor: t }));
    const layout = splitShards(items, maxShardSize, stemOf(DEFAULT_INDEX_NAME));
    const indexName = layout.length > 1 ? DEFAULT_INDEX_NAME : undefined;

    await removeStaleTemporaries(out, inputs);
    building = await makeBuildingFolder(out);

    const totalIn = view.tensors.reduce((n, t) => n + t.byteLength, 0);
    pool = new TaskPool(defaultJobs(totalIn, opts.jobs, inThreadOnly([[dtype("float32"), to]])));
    const shards: ConvertReport[] = [];
    let done = 0;
    for (const f of layout) {
      const tensors: GgufHfTensor[] = f.items.map((i) => i.tensor);
      const base = done;
      const report = await convertOpenFile(hfTensorFile(view, tensors), join(building, f.name), {
        to, outputFormat: "safetensors", force: false, jobs: opts.jobs, chunkBytes: opts.chunkBytes, signal: opts.signal,
        onProgress: opts.onProgress ? (d) => opts.onProgress!(base + d, totalIn) : undefined,
      }, pool);
      done += tensors.reduce((n, t) => n + t.byteLength, 0);
      shards.push({ ...report, output: join(out, f.name) });
    }

    const written: string[] = [];
    for (const [name, text] of Object.entries(view.plan.files)) {
      await writeChecked(join(building, name), new TextEncoder().encode(text));
      written.push(name);
    }
    const totalSize = items.reduce((n, i) => n + i.bytes, 0);
    const totalParameters = view.tensors.reduce((n, t) => n + t.size, 0);
    if (indexName !== undefined) {
      const weightMap = new Map(layout.flatMap((f) => f.items.map((i) => [i.tensor.name, f.name] as const)));
      const path = join(building, indexName);
      await writeChecked(path, new TextEncoder().encode(encodeIndex({ total_parameters: totalParameters }, weightMap, totalSize)));
      // Read back as any input index is, with every shard's header.
      const back = await checkCheckpoint(building, indexName, path);
      if (back.dataBytes !== totalSize || back.weightMap.size !== weightMap.size || [...weightMap].some(([t, s]) => back.weightMap.get(t) !== s)) {
        throw fileError("INTERNAL", join(out, indexName), "the index written does not read back as planned, so nothing was written");
      }
    }
    if (opts.signal?.aborted) throw new Interrupted();
    await commitFolder(building, out, replace);
    forgetAtExit(building);
    building = undefined;
    return {
      input, output: out, architecture: view.plan.architecture, to: to.name,
      files: layout.map((f) => f.name), indexName, totalSize, totalParameters, written,
      tensors: view.tensors.map((t) => ({ name: t.name, from: t.plan.from, ggmlType: t.source.ggml.type, shape: [...t.shape], transform: t.plan.transform.kind })),
      skipped: [...view.plan.skipped], shards,
      bytesIn: gguf.size, bytesOut: shards.reduce((n, r) => n + r.bytesOut, 0),
      seconds: (performance.now() - started) / 1000, workers: pool.started,
    };
  } finally {
    if (pool) await pool.close();
    await gguf.close();
    if (building) {
      await fsp.rm(building, { recursive: true, force: true }).catch(() => undefined);
      forgetAtExit(building);
    }
  }
}
