/**
 * `quantizeCheckpoint(IN, OUT, { mode })`: a safetensors file or a sharded checkpoint folder
 * quantized to FP8 blocks (transformers' FineGrainedFP8 layout) or MXFP4 experts (gpt-oss' layout),
 * and `dequantizeTensors`, the way back, used by `convert QDIR --to T`.
 *
 * Streaming: an FP8 weight is read, quantized and written one band of R rows at a time, MXFP4
 * experts one expert at a time, every other tensor in 4 MiB runs; each output shard's header is
 * planned first (every output size is known from the shapes), so nothing holds a shard in memory.
 * A folder is built as `convert DIR` builds one (sharded.ts): in a hidden temporary folder, other
 * files copied (config.json with its quantization_config, see quantizedConfigText), an index with
 * the exact total_size read back from the shards, then renamed to OUT.
 */
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { dtype, TensorcastError, type DType } from "../../index.js";
import {
  fp8BlockRefusal, fp8QuantizeBand, MX_BLOCK, NV_BLOCK, nvfp4AbsMax, nvfp4GlobalScale, nvfp4QuantizeRows, nvfp4Refusal, mxfp4Quantize, mxfp4Refusal, type Fp8ScaleFormat,
} from "../../kernels/quant/index.js";
import { CheckpointShards, listedTensors, openShard, readCheckpoint, shardSource, type Checkpoint } from "../io/checkpoint.js";
import { isPytorchFolder } from "../io/pytorch-folder.js";
import type { PlannedShard, ShardItem } from "../io/shard-split.js";
import { AtomicOutput, checkOutput, fileError, sameFile, systemError, temporaryPath } from "../io/file.js";
import { forgetAtExit, removeAtExit } from "../io/exit-cleanup.js";
import { parseJsonFile } from "../io/json.js";
import { openTensorFile } from "../io/reader.js";
import { encodeSafetensorsHeader } from "../io/safetensors.js";
import { checkReadRange, rawByteLength, type FileTensor, type TensorFile, type TensorInfo } from "../io/tensors.js";
import { LogicalRows, ReadBuffer, type LogicalTensor } from "./logical-reader.js";
import {
  checkOutputFolder, checkSliceOptions, commitFolder, copyAtomically, indexCheckpoint, planLayout, sliceShards, type OutputLayout, type ShardSlice,
} from "../convert/sharded.js";

export type { LogicalTensor } from "./logical-reader.js";

/** The schemes `quantize` writes. */
export type QuantizeMode = "fp8" | "fp8-ue8m0" | "mxfp4" | "nvfp4";
export const QUANTIZE_MODES: readonly QuantizeMode[] = ["fp8", "fp8-ue8m0", "mxfp4", "nvfp4"];

export interface QuantizeOptions {
  mode: QuantizeMode;
  /** FP8 tile, rows x columns (default 128 x 128). */
  block?: readonly [number, number];
  /** Only tensors whose name matches are candidates. */
  only?: RegExp;
  /** Tensors whose name matches are kept. */
  skip?: RegExp;
  force?: boolean;
  /** Only slice K of N of a sharded checkpoint's shards, into a shared OUT, and no index (then `tensorcast index OUT`). */
  shard?: ShardSlice;
  /**
   * A folder's output laid out anew with at most this many bytes of tensor data per shard
   * (save_pretrained's max_shard_size; a quantized weight and its scales count together and stay
   * in one file); default: the input's layout.
   */
  maxShardSize?: number;
}

/** What happened to one tensor of the input. */
export interface QuantizedTensor {
  name: string;
  /** "quantized" with the names written, or "kept" with the reason. */
  action: "quantized" | "kept";
  reason?: string;
  written: string[];
}

export interface QuantizeReport {
  input: string;
  output: string;
  mode: QuantizeMode;
  block?: readonly [number, number];
  tensors: QuantizedTensor[];
  copied: string[];
  /** Whether config.json got a quantization_config. */
  config: boolean;
  bytesIn: number;
  bytesOut: number;
  totalSize?: number;
  seconds: number;
}

/** Embeddings, the output head and norms: never quantized by default (transformers leaves them). */
const DEFAULT_KEPT = /(^|\.)(embed_tokens|embeddings?|wte|wpe|lm_head|[a-z_]*norm[a-z_]*)(\.|$)/i;
const FLOAT_SOURCES = new Set(["float32", "float16", "bfloat16"]);
const EXPERTS = /(^|\.)experts\.(gate_up_proj|down_proj)$/;
const RUN = 4 * 1024 * 1024;

/** Names that only a quantized checkpoint has. */
export const QUANTIZED_NAME = /(\.weight_scale_inv|_scale_inv|_blocks|_scales|\.weight_packed|\.weight_global_scale)$/;

interface Plan {
  readonly outputs: TensorInfo[];
  readonly kind: "copy" | "fp8" | "mxfp4" | "nvfp4";
  readonly reason?: string;
}

function info(name: string, t: DType, shape: readonly number[]): TensorInfo {
  const size = shape.reduce((a, b) => a * b, 1);
  return { name, dtype: t, shape, size, byteLength: rawByteLength(t, size) };
}

/** Which tensors are quantized, and why the others are kept. */
function planTensor(t: Pick<TensorInfo, "name" | "dtype" | "shape">, opts: QuantizeOptions): Plan {
  const keep = (reason: string): Plan => ({ outputs: [info(t.name, t.dtype, t.shape)], kind: "copy", reason });
  if (opts.only && !opts.only.test(t.name)) return keep("not matched by --only");
  if (opts.skip?.test(t.name)) return keep("matched by --skip");
  if (opts.mode === "mxfp4") {
    if (!EXPERTS.test(t.name)) {
      return keep(t.shape.length === 2 ? "dense weight: transformers' Mxfp4 loader reads MXFP4 only for MoE experts (gpt-oss)" : "not MoE experts");
    }
    if (!FLOAT_SOURCES.has(t.dtype.name)) return keep(`type ${t.dtype.name} (float32, float16 or bfloat16 are quantized)`);
    const refusal = mxfp4Refusal(t.shape);
    if (refusal) return keep(refusal);
    const [e, inDim, outDim] = t.shape;
    const g = inDim / 32;
    return {
      kind: "mxfp4",
      outputs: [info(`${t.name}_blocks`, dtype("uint8"), [e, outDim, g, 16]), info(`${t.name}_scales`, dtype("uint8"), [e, outDim, g])],
    };
  }
  if (!t.name.endsWith(".weight")) return keep("not a .weight");
  if (DEFAULT_KEPT.test(t.name.slice(0, -".weight".length))) return keep("embedding, lm_head or norm (kept by default)");
  if (!FLOAT_SOURCES.has(t.dtype.name)) return keep(`type ${t.dtype.name} (float32, float16 or bfloat16 are quantized)`);
  if (opts.mode === "nvfp4") {
    const refusal = nvfp4Refusal(t.shape);
    if (refusal) return keep(refusal);
    const [rows, cols] = t.shape;
    const base = t.name.slice(0, -"weight".length);
    return {
      kind: "nvfp4",
      outputs: [
        info(`${base}weight_packed`, dtype("uint8"), [rows, cols / 2]), info(`${base}weight_scale`, dtype("float8e4m3fn"), [rows, cols / NV_BLOCK]),
        info(`${base}weight_global_scale`, dtype("float32"), [1]),
      ],
    };
  }
  const block = opts.block ?? [128, 128];
  const refusal = fp8BlockRefusal(t.shape, block);
  if (refusal) return keep(refusal);
  const [rows, cols] = t.shape;
  const scaleType = opts.mode === "fp8-ue8m0" ? dtype("float8e8m0") : dtype("float32");
  return {
    kind: "fp8",
    outputs: [info(t.name, dtype("float8e4m3fn"), t.shape), info(`${t.name}_scale_inv`, scaleType, [rows / block[0], cols / block[1]])],
  };
}

/** Copies a tensor's bytes into `out` at `at` in runs of about RUN bytes; returns the end. */
async function copyTensor(t: FileTensor, out: AtomicOutput, at: number, buffer: ReadBuffer): Promise<number> {
  const per = Math.max(8, Math.floor(RUN / Math.max(1, t.byteLength / Math.max(1, t.size))) & ~7);
  for (let start = 0; start < t.size; start += per) {
    const n = Math.min(per, t.size - start);
    const bytes = await t.read(start, n, buffer.take(rawByteLength(t.dtype, start + n) - rawByteLength(t.dtype, start)));
    await out.write(bytes, at);
    at += bytes.length;
  }
  return at;
}

/**
 * MXFP4 experts [E, in, out] into `out` at `at` (blocks, then scales): one expert's packed blocks
 * and scales assembled in memory (in * out / 2 + in * out / 32 bytes), its source read in runs of
 * whole groups of 32 input rows (about RUN bytes). The stored layout is transposed ([out, in]), so
 * a run of input rows lands in every output row: assembling the expert keeps the writes large.
 */
async function quantizeExperts(t: FileTensor, out: AtomicOutput, at: number, buffer: ReadBuffer, expert: [ReadBuffer, ReadBuffer]): Promise<number> {
  const [experts, inDim, outDim] = t.shape;
  const groups = inDim / MX_BLOCK;
  const rowBlocks = groups * (MX_BLOCK / 2);
  const perExpert = inDim * outDim;
  const blocksBytes = (experts * perExpert) / 2;
  const elementBytes = t.byteLength / Math.max(1, t.size);
  const runGroups = Math.max(1, Math.floor(RUN / (MX_BLOCK * outDim * elementBytes)));
  for (let e = 0; e < experts; e++) {
    const blocks = expert[0].take(perExpert / 2);
    const scales = expert[1].take(perExpert / MX_BLOCK);
    for (let g0 = 0; g0 < groups; g0 += runGroups) {
      const k = Math.min(runGroups, groups - g0);
      const n = k * MX_BLOCK * outDim;
      const x = await t.read(e * perExpert + g0 * MX_BLOCK * outDim, n, buffer.take(n * elementBytes));
      // [1, 32k, out] gives [1, out, k, 16] and [1, out, k]: each output row's k groups at g0.
      const q = mxfp4Quantize(x, t.dtype, [1, k * MX_BLOCK, outDim]);
      for (let o = 0; o < outDim; o++) {
        blocks.set(q.blocks.subarray(o * k * (MX_BLOCK / 2), (o + 1) * k * (MX_BLOCK / 2)), o * rowBlocks + g0 * (MX_BLOCK / 2));
        scales.set(q.scales.subarray(o * k, (o + 1) * k), o * groups + g0);
      }
    }
    await out.write(blocks, at + e * blocks.length);
    await out.write(scales, at + blocksBytes + e * scales.length);
  }
  return at + blocksBytes + perExpert * experts / MX_BLOCK;
}

/**
 * NVFP4 of a [rows, cols] weight into `out` at `at` (weight_packed, weight_scale, weight_global_scale):
 * a first pass over the weight for its amax (the global scale needs it before any block), then runs
 * of rows of about RUN bytes.
 */
async function quantizeNvfp4(t: FileTensor, out: AtomicOutput, at: number, buffer: ReadBuffer): Promise<number> {
  const [rows, cols] = t.shape;
  const elementBytes = t.byteLength / Math.max(1, t.size);
  const runRows = Math.max(1, Math.floor(RUN / Math.max(1, cols * elementBytes)));
  let amax = 0;
  for (let r = 0; r < rows; r += runRows) {
    const n = Math.min(runRows, rows - r) * cols;
    amax = Math.max(amax, nvfp4AbsMax(await t.read(r * cols, n, buffer.take(n * elementBytes)), t.dtype, n));
    if (amax !== amax) break;
  }
  let g: number;
  try {
    g = nvfp4GlobalScale(amax);
  } catch (e) {
    throw e instanceof TensorcastError ? new TensorcastError(e.code, `${t.name}: ${e.message}`) : e;
  }
  const packedAt = at;
  const scalesAt = at + (rows * cols) / 2;
  for (let r = 0; r < rows; r += runRows) {
    const k = Math.min(runRows, rows - r);
    const q = nvfp4QuantizeRows(await t.read(r * cols, k * cols, buffer.take(k * cols * elementBytes)), t.dtype, k, cols, g);
    await out.write(q.packed, packedAt + (r * cols) / 2);
    await out.write(q.scales, scalesAt + (r * cols) / NV_BLOCK);
  }
  const globalAt = scalesAt + (rows * cols) / NV_BLOCK;
  await out.write(new Uint8Array(new Float32Array([g]).buffer), globalAt);
  return globalAt + 4;
}

/** Writes one shard from the file `inPath`: the planned header, then each tensor streamed. */
async function quantizeShard(inPath: string, outPath: string, opts: QuantizeOptions, report: QuantizedTensor[], force = false): Promise<{ bytesIn: number; bytesOut: number }> {
  const file = await openTensorFile(inPath, { format: "safetensors" });
  try {
    return await quantizeOpen(file, outPath, opts, report, force);
  } finally {
    await file.close();
  }
}

/** quantizeShard for the shard `shard` of `c` (a safetensors shard, or a PyTorch folder's .bin read as the one it becomes). */
async function quantizeCheckpointShard(c: Checkpoint, shard: string, outPath: string, opts: QuantizeOptions, report: QuantizedTensor[], force = false): Promise<{ bytesIn: number; bytesOut: number }> {
  const file = await openShard(c, shard);
  try {
    return await quantizeOpen(file, outPath, opts, report, force);
  } finally {
    await file.close();
  }
}

/** quantizeShard for a file already open, or a view of tensors from several (CheckpointShards), left open. */
async function quantizeOpen(file: TensorFile, outPath: string, opts: QuantizeOptions, report: QuantizedTensor[], force = false): Promise<{ bytesIn: number; bytesOut: number }> {
  const inPath = file.path;
  let out: AtomicOutput | undefined;
  try {
    for (const t of file.tensors) {
      if (QUANTIZED_NAME.test(t.name) || t.dtype.name.startsWith("float8")) {
        throw fileError("INVALID_ATTRIBUTE", inPath, `is already quantized (it holds ${t.name}, ${t.dtype.name}); dequantize it first with convert --to bfloat16`, t.name);
      }
    }
    const plans = file.tensors.map((t) => ({ ...planTensor(t, opts), source: t }));
    const header = encodeSafetensorsHeader(plans.flatMap((p) => p.outputs), file.metadata, outPath);
    out = await AtomicOutput.create(outPath);
    await out.write(header, 0);
    let at = header.length;
    let bytesIn = 0;
    const buffer = new ReadBuffer();
    const expert: [ReadBuffer, ReadBuffer] = [new ReadBuffer(), new ReadBuffer()];
    for (const p of plans) {
      const t = p.source;
      bytesIn += t.byteLength;
      if (p.kind === "copy") {
        at = await copyTensor(t, out, at, buffer);
        report.push({ name: t.name, action: "kept", reason: p.reason, written: [t.name] });
      } else if (p.kind === "fp8") {
        const [rows, cols] = t.shape;
        const [br, bc] = opts.block ?? [128, 128];
        const format: Fp8ScaleFormat = opts.mode === "fp8-ue8m0" ? "ue8m0" : "float32";
        let scaleAt = at + rows * cols;
        for (let r = 0; r < rows; r += br) {
          const band = fp8QuantizeBand(await t.read(r * cols, br * cols, buffer.take((br * cols * t.dtype.bits) / 8)), t.dtype, br, cols, bc, format);
          await out.write(band.weight, at + r * cols);
          await out.write(band.scaleInv, scaleAt);
          scaleAt += band.scaleInv.length;
        }
        at = scaleAt;
        report.push({ name: t.name, action: "quantized", written: p.outputs.map((o) => o.name) });
      } else if (p.kind === "nvfp4") {
        at = await quantizeNvfp4(t, out, at, buffer);
        report.push({ name: t.name, action: "quantized", written: p.outputs.map((o) => o.name) });
      } else {
        at = await quantizeExperts(t, out, at, buffer, expert);
        report.push({ name: t.name, action: "quantized", written: p.outputs.map((o) => o.name) });
      }
    }
    await out.finish(at);
    await out.commit(force);
    out = undefined;
    return { bytesIn, bytesOut: at };
  } finally {
    if (out) await out.abort();
  }
}

/**
 * config.json's text with `"quantization_config": {...}` added as the top-level object's last
 * key, every other byte kept. FP8: quant_method fp8, weight_block_size, activation_scheme dynamic
 * (+ scale_fmt ue8m0) and the kept Linear modules as modules_to_not_convert (transformers would
 * otherwise expect a weight_scale_inv for them); MXFP4: quant_method mxfp4 and
 * modules_to_not_convert.
 * @throws TensorcastError INVALID_DATA when the text is not a JSON object; INVALID_ATTRIBUTE when it
 * already has a quantization_config.
 */
export function quantizedConfigText(text: string, mode: QuantizeMode, block: readonly [number, number], keptModules: readonly string[]): string {
  const parsed = parseJsonFile(text, "config.json");
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new TensorcastError("INVALID_DATA", "config.json is not a JSON object");
  if ("quantization_config" in parsed) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "config.json already has a quantization_config: the checkpoint is quantized; dequantize it first with convert --to bfloat16");
  }
  const q: Record<string, unknown> = mode === "nvfp4"
    ? {
      quant_method: "compressed-tensors", format: "nvfp4-pack-quantized", quantization_status: "compressed",
      config_groups: {
        group_0: {
          targets: ["Linear"],
          weights: { num_bits: 4, type: "float", strategy: "tensor_group", group_size: NV_BLOCK, symmetric: true, dynamic: false, observer: "minmax" },
          input_activations: null, output_activations: null,
        },
      },
      ignore: keptModules,
    }
    : mode === "mxfp4"
    ? { quant_method: "mxfp4", modules_to_not_convert: keptModules }
    : { quant_method: "fp8", weight_block_size: [...block], activation_scheme: "dynamic", ...(mode === "fp8-ue8m0" ? { scale_fmt: "ue8m0" } : {}), modules_to_not_convert: keptModules };
  const end = text.lastIndexOf("}");
  const before = text.slice(0, end).replace(/\s*$/, "");
  const empty = before.endsWith("{");
  // The whitespace that closed the object stays after the new key, so that the way back
  // (unquantizedConfigText) gives every byte of the text again.
  const closing = text.slice(before.length, end);
  return `${before}${empty ? "" : ","}\n  "quantization_config": ${JSON.stringify(q)}${closing}${text.slice(end)}`;
}

/**
 * Module names (a weight's name without `.weight`) of the 2-D weights that stay in their type, from
 * the shards' headers alone (so that any slice of `--shard K/N` writes the same config.json).
 */
function keptModules(c: Checkpoint, opts: QuantizeOptions): string[] {
  return c.tensors.flat()
    .filter((t) => t.name.endsWith(".weight") && t.shape.length === 2 && planTensor({ name: t.name, dtype: dtype(t.dtype), shape: t.shape }, opts).kind === "copy")
    .map((t) => t.name.slice(0, -".weight".length));
}

/**
 * Quantizes `input` (a .safetensors file, or a sharded checkpoint's folder or index) into `output`
 * (a file, or a folder); see the file comment.
 * @throws TensorcastError INVALID_ATTRIBUTE for an input already quantized or a refused output.
 */
export async function quantizeCheckpoint(input: string, output: string, opts: QuantizeOptions): Promise<QuantizeReport> {
  const started = performance.now();
  const block = opts.block ?? [128, 128];
  const tensors: QuantizedTensor[] = [];
  let stat;
  try {
    stat = await fsp.stat(input);
  } catch (e) {
    throw systemError(input, "read it", e);
  }
  if (!stat.isDirectory() && !input.endsWith(".index.json")) {
    if (opts.shard) throw fileError("INVALID_ATTRIBUTE", input, "is a file; --shard slices a sharded checkpoint (a folder or its .index.json)");
    if (opts.maxShardSize !== undefined) throw fileError("INVALID_ATTRIBUTE", input, "is a file; --max-shard-size lays out a model folder's weights");
    await checkOutput(output, { input, force: opts.force });
    const r = await quantizeShard(input, output, opts, tensors);
    return { input, output, mode: opts.mode, block: opts.mode === "mxfp4" || opts.mode === "nvfp4" ? undefined : block, tensors, copied: [], config: false, ...r, seconds: (performance.now() - started) / 1000 };
  }
  const c: Checkpoint = await readCheckpoint(input);
  checkSliceOptions(input, c, opts.shard, opts.maxShardSize);
  const configText = c.others.includes("config.json") ? await fsp.readFile(join(c.folder, "config.json"), "utf8") : undefined;
  if (configText !== undefined && /"quantization_config"\s*:/.test(configText)) {
    throw fileError("INVALID_ATTRIBUTE", join(c.folder, "config.json"), "has a quantization_config: the checkpoint is already quantized; dequantize it first with convert --to bfloat16");
  }
  let bytesIn = 0;
  let bytesOut = 0;
  const config = async (name: string): Promise<Uint8Array | undefined> => (name === "config.json" && configText !== undefined
    ? new TextEncoder().encode(quantizedConfigText(configText, opts.mode, block, keptModules(c, opts)))
    : undefined);
  if (opts.shard) {
    // As convert --shard K/N: this slice's shards straight into the shared OUT, slice 0 also the other files, no index.
    const out = output.replace(/\/+$/, "");
    if (await sameFile(out, c.folder)) throw fileError("OUTPUT_IS_INPUT", out, "is the input folder; tensorcast never writes into its input");
    await fsp.mkdir(out).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw systemError(out, "create it", e);
    });
    const force = opts.force ?? false;
    for (const s of sliceShards(c.shards, opts.shard)) {
      await checkOutput(join(out, s), { input: shardSource(c, s), force });
      const r = await quantizeCheckpointShard(c, s, join(out, s), opts, tensors, force);
      bytesIn += r.bytesIn;
      bytesOut += r.bytesOut;
    }
    const copied = opts.shard.index === 0 ? [...c.others] : [];
    for (const name of copied) await copyAtomically(join(c.folder, name), join(out, name), force, undefined, undefined, await config(name));
    return {
      input, output, mode: opts.mode, block: opts.mode === "mxfp4" || opts.mode === "nvfp4" ? undefined : block, tensors, copied, config: copied.includes("config.json"),
      bytesIn, bytesOut, seconds: (performance.now() - started) / 1000,
    };
  }
  // Each input tensor with everything it becomes (a weight and its scales) is one item of the layout.
  const items = listedTensors(c).map((t) => {
    const outputs = planTensor(t, opts).outputs;
    return { names: [t.name], shard: t.shard, bytes: outputs.reduce((n, o) => n + o.byteLength, 0) };
  });
  const layout = planLayout(c, items, (i) => i.shard, opts.maxShardSize);
  const built = await buildFolder(c, output, opts.force ?? false, layout, async (f, building, views) => {
    const r = views
      ? await quantizeOpen(await views.view(f.items.flatMap((i) => i.names)), join(building, f.name), opts, tensors)
      : await quantizeCheckpointShard(c, f.name, join(building, f.name), opts, tensors);
    bytesIn += r.bytesIn;
    bytesOut += r.bytesOut;
  }, config, opts.maxShardSize !== undefined);
  return {
    input, output, mode: opts.mode, block: opts.mode === "mxfp4" || opts.mode === "nvfp4" ? undefined : block, tensors, copied: built.copied, config: configText !== undefined,
    bytesIn, bytesOut, totalSize: built.totalSize, seconds: (performance.now() - started) / 1000,
  };
}

/**
 * Builds a checkpoint folder as `convert DIR` does: `fill(file, building, views)` writes each
 * weights file of `layout` into a hidden temporary folder beside `output` (`views` given when the
 * layout is anew, to read its tensors from any shards); then `copy(name)` gives each other file of
 * the input (bytes to write instead, or undefined to copy it as it is), the index (when the layout
 * has one) is written with the exact total_size read back from the shards, and the folder is
 * renamed to `output`. Nothing is left on failure.
 */
async function buildFolder<T extends ShardItem>(
  c: Checkpoint, output: string, force: boolean, layout: OutputLayout<T>,
  fill: (file: PlannedShard<T>, building: string, views: CheckpointShards | undefined) => Promise<void>,
  copy: (name: string) => Promise<Uint8Array | undefined>, anew: boolean,
): Promise<{ copied: string[]; totalSize?: number }> {
  const replace = await checkOutputFolder(output, c.folder, force);
  const out = output.replace(/\/+$/, "");
  const building = temporaryPath(out);
  try {
    await fsp.mkdir(building);
  } catch (e) {
    throw systemError(output, `create it (as ${building})`, e);
  }
  removeAtExit(building, true);
  let done = false;
  const views = anew ? new CheckpointShards(c) : undefined;
  try {
    for (const f of layout.files) await fill(f, building, views);
    await views?.close();
    const copied: string[] = [];
    for (const name of c.others) {
      await copyAtomically(join(c.folder, name), join(building, name), false, undefined, undefined, await copy(name));
      copied.push(name);
    }
    const index = layout.indexName === undefined ? undefined : await indexCheckpoint(building, { name: layout.indexName });
    await commitFolder(building, out, replace);
    forgetAtExit(building);
    done = true;
    return { copied, totalSize: index?.totalSize };
  } finally {
    await views?.close();
    if (!done) {
      await fsp.rm(building, { recursive: true, force: true }).catch(() => undefined);
      forgetAtExit(building);
    }
  }
}

/**
 * The quantized tensors of a file's tensor list, recognized by their names: `X.weight` float8e4m3fn
 * with `X.weight_scale_inv`, and `X_blocks` / `X_scales` uint8 pairs (MXFP4 experts).
 */
export function logicalTensors(tensors: readonly FileTensor[]): LogicalTensor[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const out: LogicalTensor[] = [];
  for (const t of tensors) {
    if (t.dtype.name === "float8e4m3fn") {
      const s = byName.get(t.name.endsWith(".weight") ? `${t.name}_scale_inv` : `${t.name}_scale_inv`);
      if (s) out.push({ name: t.name, scheme: s.dtype.name === "float32" ? "fp8" : "fp8-ue8m0", shape: t.shape, parts: [t, s] });
    } else if (t.name.endsWith(".weight_packed") && t.dtype.name === "uint8" && t.shape.length === 2) {
      const base = t.name.slice(0, -"_packed".length);
      const s = byName.get(`${base}_scale`);
      const g = byName.get(`${base}_global_scale`);
      if (s && g && s.dtype.name === "float8e4m3fn" && g.dtype.name === "float32" && g.size === 1) {
        out.push({ name: base, scheme: "nvfp4", shape: [t.shape[0], t.shape[1] * 2], parts: [t, s, g] });
      }
    } else if (t.name.endsWith("_blocks") && t.dtype.name === "uint8") {
      const s = byName.get(`${t.name.slice(0, -"_blocks".length)}_scales`);
      if (s && t.shape.length === 4) {
        const [e, o, g] = t.shape;
        out.push({ name: t.name.slice(0, -"_blocks".length), scheme: "mxfp4", shape: [e, g * 32, o], parts: [t, s] });
      }
    }
  }
  return out;
}

/**
 * The dequantized value of a whole logical tensor as raw bytes of `to` (float32, float16 or
 * bfloat16): transformers' Fp8Dequantize or convert_moe_packed_tensors, bit for bit. Holds the
 * whole tensor: the file jobs read runs of rows through LogicalRows instead.
 * @throws TensorcastError INVALID_DATA for a NaN, Inf, zero or negative scale.
 */
export async function dequantizeLogical(l: LogicalTensor, to: DType): Promise<Uint8Array> {
  const rows = new LogicalRows(l, to);
  await rows.checkScales();
  return rows.read(0, rows.rows);
}

/**
 * Dequantizes a quantized safetensors file (FP8 blocks or MXFP4 experts) into `output` with every
 * quantized tensor back as one tensor of type `to`; the other tensors are copied as they are.
 */
export async function dequantizeFile(input: string, output: string, to: DType, force = false): Promise<{ dequantized: string[]; kept: string[] }> {
  const file = await openTensorFile(input, { format: "safetensors" });
  try {
    return await dequantizeOpen(file, output, to, force);
  } finally {
    await file.close();
  }
}

type DequantizeItem = { kind: "copy"; t: FileTensor } | { kind: "deq"; l: LogicalTensor };

/** What a quantized file's tensors become on the way back, in order: each copied, or the first part of a logical tensor standing for it. */
function dequantizeItems(tensors: readonly FileTensor[]): { logical: LogicalTensor[]; items: DequantizeItem[] } {
  const logical = logicalTensors(tensors);
  const partOf = new Map<string, LogicalTensor>();
  for (const l of logical) for (const p of l.parts) partOf.set(p.name, l);
  const items: DequantizeItem[] = [];
  for (const t of tensors) {
    const l = partOf.get(t.name);
    if (!l) items.push({ kind: "copy", t });
    else if (l.parts[0] === t) items.push({ kind: "deq", l });
  }
  return { logical, items };
}

/** dequantizeFile for a file already open, or a view of tensors from several (CheckpointShards), left open. */
async function dequantizeOpen(file: TensorFile, output: string, to: DType, force = false): Promise<{ dequantized: string[]; kept: string[] }> {
  const input = file.path;
  let out: AtomicOutput | undefined;
  try {
    await checkOutput(output, { input, force });
    const { logical, items } = dequantizeItems(file.tensors);
    const header = encodeSafetensorsHeader(items.map((i) => (i.kind === "copy" ? i.t : info(i.l.name, to, i.l.shape))), file.metadata, output);
    out = await AtomicOutput.create(output);
    await out.write(header, 0);
    // Every scale checked before anything is written (scales are small: a run at a time).
    const readers = new Map(logical.map((l) => [l.name, new LogicalRows(l, to)] as const));
    const buffer = new ReadBuffer();
    for (const r of readers.values()) await r.checkScales();
    let at = header.length;
    for (const i of items) {
      if (i.kind === "copy") {
        at = await copyTensor(i.t, out, at, buffer);
        continue;
      }
      const rows = readers.get(i.l.name)!;
      for (let r = 0; r < rows.rows; r = rows.runEnd(r)) {
        const bytes = await rows.read(r, rows.runEnd(r), true);
        await out.write(bytes, at);
        at += bytes.length;
      }
    }
    await out.finish(at);
    await out.commit(force);
    out = undefined;
    return { dequantized: logical.map((l) => l.name), kept: items.filter((i) => i.kind === "copy").map((i) => (i as { t: FileTensor }).t.name) };
  } finally {
    if (out) await out.abort();
  }
}

/**
 * config.json's text without its top-level "quantization_config" key (and the comma that joined
 * it), every other byte kept; the text as it is when it has none.
 */
export function unquantizedConfigText(text: string): string {
  const key = text.search(/"quantization_config"\s*:/);
  if (key < 0) return text;
  let i = text.indexOf(":", key) + 1;
  while (/\s/.test(text[i])) i++;
  // The value's end: a string-aware walk to the matching close of an object (or the next , or }).
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      if (depth === 0) break;
      depth--;
      if (depth === 0) {
        i++;
        break;
      }
    } else if (ch === "," && depth === 0) break;
  }
  let start = key;
  let end = i;
  const before = text.slice(0, start).replace(/\s*$/, "");
  if (before.endsWith(",")) start = before.length - 1;
  else {
    const after = text.slice(end).match(/^\s*,\s*/);
    if (after) end += after[0].length;
    // The only key: the whitespace before it goes too ("{\n  KEY}" was "{}").
    else start = before.length;
  }
  return text.slice(0, start) + text.slice(end);
}

/**
 * Whether a checkpoint folder or safetensors file is quantized: config.json's quantization_config
 * (a folder) or a tensor pair that logicalTensors recognizes.
 */
/** Whether config.json's text names quant_method "fp8", "mxfp4" or compressed-tensors' nvfp4-pack-quantized (false for text that is not JSON). */
function ourScheme(text: string, file: string): boolean {
  let config: unknown;
  try {
    config = parseJsonFile(text, file);
  } catch {
    return false;
  }
  const q = (config as { quantization_config?: { quant_method?: unknown; format?: unknown } } | null)?.quantization_config;
  return typeof q === "object" && q !== null &&
    (q.quant_method === "fp8" || q.quant_method === "mxfp4" || (q.quant_method === "compressed-tensors" && q.format === "nvfp4-pack-quantized"));
}

export async function isQuantized(input: string): Promise<boolean> {
  let dir = false;
  try {
    dir = (await fsp.stat(input)).isDirectory();
  } catch {
    return false;
  }
  if (dir || input.endsWith(".index.json")) {
    // torch.save's checkpoints hold no scheme of this module.
    if (await isPytorchFolder(input)) return false;
    const c = await readCheckpoint(input);
    // Only the schemes this module writes: a bitsandbytes or GPTQ quantization_config is not ours.
    if (c.others.includes("config.json") && ourScheme(await fsp.readFile(join(c.folder, "config.json"), "utf8"), join(c.folder, "config.json"))) return true;
    return c.tensors.some((ts) => ts.some((t) => /(_scale_inv|_blocks|\.weight_packed)$/.test(t.name)));
  }
  if (!input.endsWith(".safetensors")) return false;
  const f = await openTensorFile(input, { format: "safetensors" });
  try {
    return logicalTensors(f.tensors).length > 0;
  } finally {
    await f.close();
  }
}

/**
 * `convert QDIR --to T`: a quantized file or folder back to one tensor per quantized weight, of
 * type `to`; a folder built as quantizeCheckpoint builds one, config.json without its
 * quantization_config.
 */
export async function dequantizeCheckpoint(
  input: string, output: string, to: DType, force = false, maxShardSize?: number,
): Promise<{ dequantized: string[]; kept: string[]; totalSize?: number }> {
  const dir = (await fsp.stat(input)).isDirectory() || input.endsWith(".index.json");
  if (!dir) {
    if (maxShardSize !== undefined) throw fileError("INVALID_ATTRIBUTE", input, "is a file; --max-shard-size lays out a model folder's weights");
    return dequantizeFile(input, output, to, force);
  }
  const c = await readCheckpoint(input);
  const dequantized: string[] = [];
  const kept: string[] = [];
  // Each tensor copied, or each quantized one with all its parts, is one item of the layout, sized as written.
  const listed = listedTensors(c);
  const shardOf = new Map(listed.map((t) => [t.name, t.shard]));
  const items = dequantizeItems(listed).items.map((i) => (i.kind === "copy"
    ? { names: [i.t.name], shard: shardOf.get(i.t.name)!, bytes: i.t.byteLength }
    : { names: i.l.parts.map((p) => p.name), shard: shardOf.get(i.l.parts[0].name)!, bytes: rawByteLength(to, i.l.shape.reduce((a, b) => a * b, 1)) }));
  const layout = planLayout(c, items, (i) => i.shard, maxShardSize);
  const built = await buildFolder(c, output, force, layout, async (f, building, views) => {
    const r = views
      ? await dequantizeOpen(await views.view(f.items.flatMap((i) => i.names)), join(building, f.name), to)
      : await dequantizeFile(join(c.folder, f.name), join(building, f.name), to);
    dequantized.push(...r.dequantized);
    kept.push(...r.kept);
  }, async (name) => (name === "config.json" ? new TextEncoder().encode(unquantizedConfigText(await fsp.readFile(join(c.folder, name), "utf8"))) : undefined), maxShardSize !== undefined);
  return { dequantized, kept, totalSize: built.totalSize };
}

/** How a logical tensor is stored: "fp8 128x128 (float8e4m3fn + weight_scale_inv float32 [2, 3])". */
export function describeLogical(l: LogicalTensor): string {
  const [w, s] = l.parts;
  if (l.scheme === "nvfp4") return `nvfp4 1x16 (weight_packed uint8 [${w.shape.join(", ")}] + weight_scale float8e4m3fn [${s.shape.join(", ")}] + weight_global_scale)`;
  if (l.scheme === "mxfp4") return `mxfp4 1x32 (${w.name.slice(l.name.length + 1)} uint8 [${w.shape.join(", ")}] + scales e8m0 [${s.shape.join(", ")}])`;
  const block = `${w.shape[0] / s.shape[0]}x${w.shape[1] / s.shape[1]}`;
  return `${l.scheme} ${block} (float8e4m3fn + weight_scale_inv ${s.dtype.name} [${s.shape.join(", ")}])`;
}

/**
 * `file` with each quantized pair shown as one logical tensor of type `typeOf(name)` (its
 * dequantized values, as transformers loads them), for `inspect` and `diff`. A read dequantizes
 * the rows that hold the elements asked for (LogicalRows: one band or one expert's packed
 * blocks at most beside them), never the whole tensor. `quantized` maps each logical name to
 * describeLogical's text.
 */
export function dequantizedView(file: TensorFile, typeOf: (name: string) => DType): { file: TensorFile; quantized: Map<string, string> } {
  const logical = logicalTensors(file.tensors);
  const quantized = new Map<string, string>();
  if (logical.length === 0) return { file, quantized };
  const partOf = new Map<string, LogicalTensor>();
  for (const l of logical) for (const p of l.parts) partOf.set(p.name, l);
  const tensors: FileTensor[] = [];
  for (const t of file.tensors) {
    const l = partOf.get(t.name);
    if (!l) tensors.push(t);
    else if (l.parts[0] === t) {
      const to = typeOf(l.name);
      const i = info(l.name, to, l.shape);
      quantized.set(l.name, describeLogical(l));
      let reader: LogicalRows | undefined;
      tensors.push({
        ...i,
        // `into` is ignored, as the FileTensor contract allows a decoding reader to.
        async read(start: number, count: number): Promise<Uint8Array> {
          checkReadRange(i, start, count);
          if (count === 0) return new Uint8Array(0);
          reader ??= new LogicalRows(l, to);
          const per = to.bits / 8;
          const r0 = Math.floor(start / reader.cols);
          const r1 = Math.max(r0, Math.ceil((start + count) / reader.cols));
          const from = (start - r0 * reader.cols) * per;
          return (await reader.read(r0, r1)).subarray(from, from + count * per);
        },
      });
    }
  }
  return { file: { path: file.path, format: file.format, size: file.size, tensors, metadata: file.metadata, close: () => file.close() }, quantized };
}
