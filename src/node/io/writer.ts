/**
 * The layout of an output file, decided before any tensor is converted: the header bytes, which
 * byte ranges are copied from the input, and where each tensor's bytes go. Every size is known in
 * advance (a type change changes a tensor's length predictably), so tensors can be written at their
 * final positions in any order, in parallel.
 */
import { TensorcastError, type DType } from "../../index.js";
import { WireWriter } from "../../io/onnx/wire-writer.js";
import { WIRE_LEN } from "../../io/onnx/wire.js";
import { basename } from "node:path";
import { sideFilePath } from "./external-data.js";
import { fileError } from "./file.js";
import { encodeNpyHeader, npyItemSize } from "./npy.js";
import type { OnnxModelFile } from "./reader.js";
import { encodeSafetensorsHeader } from "./safetensors.js";
import { rawByteLength, type FileFormat, type FileTensor, type TensorFile } from "./tensors.js";

/** A tensor as the output holds it. */
export interface OutputTensor {
  readonly source: FileTensor;
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly size: number;
  /** "raw": the raw layout; "npy": sub-byte types one element per byte. */
  readonly encoding: "raw" | "npy";
  /** Its bytes in the output. */
  readonly byteLength: number;
  /** Where its bytes start in the output file, or in the side file when `side` is set. */
  readonly offset: number;
  /** Its bytes go to the model's side file (plan.external), not the output file. */
  readonly side?: boolean;
}

/** A tensor as a file's header or message lists it. */
export interface TensorEntry {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

export type Segment =
  | { readonly kind: "bytes"; readonly data: Uint8Array }
  | { readonly kind: "copy"; readonly from: number; readonly length: number }
  | { readonly kind: "tensor"; readonly tensor: OutputTensor };

export interface OutputPlan {
  readonly format: FileFormat;
  readonly segments: readonly Segment[];
  /** Every tensor whose bytes the converter writes (for ONNX models: the converted initializers only). */
  readonly tensors: readonly OutputTensor[];
  /**
   * Every tensor the output lists, in file order, as reading it back must find it (for ONNX models
   * every initializer, converted or copied). verify.ts checks the written file against this.
   */
  readonly lists: readonly TensorEntry[];
  /** The output's total size in bytes. */
  readonly size: number;
  /** An .onnx output's side file, when its initializers' data is written there. */
  readonly external?: SideFilePlan;
}

/** Output byte length of `size` elements of `t` in `encoding`. */
export function encodedLength(t: DType, size: number, encoding: "raw" | "npy"): number {
  return encoding === "npy" ? size * npyItemSize(t) : rawByteLength(t, size);
}

/**
 * Lays out `format` output for `input`, where `targets` gives the new type of the tensors that
 * change (the others keep theirs).
 * @throws TensorcastError UNSUPPORTED_TYPE when the format cannot hold a tensor or the input's
 *         shape (several tensors into one .npy, a model from a non-model), naming the file.
 */
export async function planOutput(
  input: TensorFile, format: FileFormat, targets: ReadonlyMap<FileTensor, DType>, outPath: string, model: ModelOutputOptions = {},
): Promise<OutputPlan> {
  if (format === "onnx") return planModelOutput(input, targets, outPath, model);
  if (format === "pytorch") {
    throw fileError("UNSUPPORTED_TYPE", outPath, "tensorcast reads PyTorch checkpoints but writes none (a pickle is code); write .safetensors instead");
  }
  if (format === "gguf") {
    throw fileError("UNSUPPORTED_TYPE", outPath, "tensorcast reads GGUF models but does not write them yet; write .safetensors instead (-o OUT.safetensors)");
  }
  if (typeof model.externalData === "string") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `--external-data writes the side file of an .onnx model; ${outPath} is ${format}`);
  }
  const typeOf = (t: FileTensor): DType => targets.get(t) ?? t.dtype;
  for (const t of input.tensors) {
    if (t.dtype.kind === "string") {
      throw fileError("UNSUPPORTED_TYPE", outPath, `${format} cannot hold STRING tensors (from ${input.path})`, t.name);
    }
  }
  if (format === "safetensors") {
    const header = encodeSafetensorsHeader(
      input.tensors.map((t) => ({ name: t.name, dtype: typeOf(t), shape: t.shape, size: t.size, byteLength: rawByteLength(typeOf(t), t.size) })),
      input.metadata,
      outPath,
    );
    return sequential(format, header, input.tensors.map((t) => [t, typeOf(t), "raw"]));
  }
  if (input.tensors.length !== 1) {
    throw fileError(
      "UNSUPPORTED_TYPE", outPath,
      `a .${format} file holds one tensor, but ${input.path} has ${input.tensors.length}; write .safetensors instead`,
    );
  }
  const t = input.tensors[0];
  const type = typeOf(t);
  if (format === "npy") return sequential(format, encodeNpyHeader(type, t.shape, outPath, t.name), [[t, type, "npy"]]);
  return sequential(format, tensorProtoPrefix(t.name, type, t.shape, rawByteLength(type, t.size)), [[t, type, "raw"]]);
}

function sequential(format: FileFormat, header: Uint8Array, tensors: [FileTensor, DType, "raw" | "npy"][]): OutputPlan {
  const file = new FileLayout();
  file.push({ kind: "bytes", data: header });
  for (const [source, dtype, encoding] of tensors) {
    const byteLength = encodedLength(dtype, source.size, encoding);
    file.push({ kind: "tensor", tensor: { source, name: source.name, dtype, shape: source.shape, size: source.size, encoding, byteLength, offset: 0 } });
  }
  return { format, segments: file.segments, tensors: file.tensors, lists: file.tensors, size: file.size };
}

/** Bytes a segment takes in the output file. */
function segmentLength(s: Segment): number {
  return s.kind === "bytes" ? s.data.length : s.kind === "copy" ? s.length : s.tensor.byteLength;
}

/** An output file being laid out: each tensor segment placed where it falls. */
class FileLayout {
  readonly segments: Segment[] = [];
  /** The tensors placed, with their offsets in the file. */
  readonly tensors: OutputTensor[] = [];
  size = 0;

  push(s: Segment): void {
    if (s.kind === "tensor") {
      s = { kind: "tensor", tensor: { ...s.tensor, offset: this.size } };
      this.tensors.push(s.tensor);
    }
    this.segments.push(s);
    this.size += segmentLength(s);
  }
}

/**
 * The fields of a TensorProto before its raw_data bytes: dims, data_type, name, any `extra`
 * fields copied from the original, then raw_data's tag and length.
 */
export function tensorProtoPrefix(name: string, t: DType, shape: readonly number[], byteLength: number, extra?: Uint8Array): Uint8Array {
  const w = new WireWriter(64 + 3 * name.length + (extra?.length ?? 0));
  for (const d of shape) w.int64Field(1, d);
  w.uint32Field(2, t.onnx);
  if (name) w.stringField(8, name, "tensor name");
  if (extra) w.raw(extra);
  w.tag(9, WIRE_LEN).lengthPrefix(byteLength);
  return w.finish().slice();
}

function lengthDelimitedTag(field: number, length: number): Uint8Array {
  return new WireWriter(16).tag(field, WIRE_LEN).lengthPrefix(length).finish().slice();
}

/** Protobuf refuses a message of 2 GiB or more: the largest .onnx file written inline. */
export const MAX_INLINE_MODEL = 2 ** 31 - 1;
/** onnx's `convert_model_to_external_data` default: initializers of at least this many bytes go to the side file. */
export const EXTERNAL_THRESHOLD = 1024;
/**
 * Side-file offsets: every tensor starts on a multiple of 64 bytes (any element type can be
 * viewed in place), and one of at least 1 MiB on a 4096-byte page, as onnxruntime aligns
 * large initializers so they can be memory-mapped.
 */
const ALIGN_SMALL = 64;
const ALIGN_PAGE = 4096;
const PAGE_FROM = 1 << 20;

function aligned(at: number, byteLength: number): number {
  const a = byteLength >= PAGE_FROM ? ALIGN_PAGE : ALIGN_SMALL;
  return Math.ceil(at / a) * a;
}

/** A side file of a model: where it goes, how the model names it, and the tensors it holds. */
export interface SideFilePlan {
  readonly path: string;
  /** The model's external_data location: `path` relative to the model's folder. */
  readonly location: string;
  /** Tensors with `side` set; their offsets are in the side file. */
  readonly tensors: readonly OutputTensor[];
  readonly size: number;
  /** Chosen because the model would be over 2 GiB inline, not asked for. */
  readonly automatic: boolean;
}

/**
 * How an .onnx output keeps its initializers.
 * @example
 * await planOutput(model, "onnx", targets, "out/m.onnx", { externalData: "m.onnx.data" });
 * // plan.external: { path: "out/m.onnx.data", location: "m.onnx.data", tensors, size, automatic: false }
 */
export interface ModelOutputOptions {
  /**
   * A side file's location, relative to the output's folder: initializers of `threshold` bytes or
   * more are written there. `false`: every initializer inline (refused over 2 GiB). Undefined
   * (the default): inline, unless that would be over 2 GiB; then `<output>.data`.
   */
  externalData?: string | false;
  /** Default EXTERNAL_THRESHOLD (1024 bytes). */
  threshold?: number;
}

/** Where a model's side file goes, as planModel and layEditedModel take it; undefined: inline. */
type SidePlacement = { location: string; path: string; automatic: boolean } | undefined;

/** A side file being laid out: its tensors at aligned offsets, in order. */
class SideLayout {
  readonly tensors: OutputTensor[] = [];
  size = 0;
}

/**
 * One initializer's field in an .onnx output: its tag, then its TensorProto. With `toSide` the
 * message is whole, referring to the tensor's bytes at the next aligned offset of the side file
 * (`layout`); otherwise it stops where raw_data's bytes begin, and `inline` is the tensor whose
 * bytes follow it (its offset in the file is set when the file is laid out), then `inlineSuffix`.
 */
function initializerField(
  t: Omit<OutputTensor, "offset" | "side">, extra: Uint8Array, side: SidePlacement, layout: SideLayout, toSide: boolean, inlineSuffix?: Uint8Array,
): { head: Uint8Array; message: Uint8Array; bodyLength: number; inline?: OutputTensor } {
  if (side && toSide) {
    const offset = aligned(layout.size, t.byteLength);
    layout.size = offset + t.byteLength;
    layout.tensors.push({ ...t, offset, side: true });
    const message = externalTensorProto(t.name, t.dtype, t.shape, extra, side.location, offset, t.byteLength);
    return { head: lengthDelimitedTag(5, message.length), message, bodyLength: message.length };
  }
  const message = tensorProtoPrefix(t.name, t.dtype, t.shape, t.byteLength, extra);
  // The suffix's bytes follow the tensor's; the caller writes them.
  const bodyLength = message.length + t.byteLength + (inlineSuffix?.length ?? 0);
  return { head: lengthDelimitedTag(5, bodyLength), message, bodyLength, inline: { ...t, offset: 0, side: false } };
}

/**
 * The plan of an .onnx output, inline or with a side file as `opts` says (see ModelOutputOptions),
 * whichever way `lay` lays the model out for a placement: inline first when that is allowed, the
 * side file when it is asked for or the inline model would pass 2 GiB.
 * @throws TensorcastError UNSUPPORTED_TYPE when the model cannot be written as asked (over 2 GiB inline).
 */
async function chooseModelLayout(
  outPath: string, opts: ModelOutputOptions, lay: (side: SidePlacement, threshold: number) => OutputPlan | Promise<OutputPlan>,
): Promise<OutputPlan> {
  const threshold = opts.threshold ?? EXTERNAL_THRESHOLD;
  let automatic = false;
  if (typeof opts.externalData !== "string") {
    const inline = await lay(undefined, threshold);
    if (inline.size <= MAX_INLINE_MODEL) return inline;
    if (opts.externalData === false) {
      throw fileError(
        "UNSUPPORTED_TYPE", outPath,
        `would be ${inline.size} bytes inline, over protobuf's limit of 2 GiB (${MAX_INLINE_MODEL} bytes); write its initializers to a side file (--external-data ${basename(outPath)}.data)`,
      );
    }
    automatic = true;
  }
  const location = typeof opts.externalData === "string" ? opts.externalData : `${basename(outPath)}.data`;
  const plan = await lay({ location, path: sideFilePath(outPath, location), automatic }, threshold);
  if (plan.size > MAX_INLINE_MODEL) {
    throw fileError(
      "UNSUPPORTED_TYPE", outPath,
      `would be ${plan.size} bytes even with every initializer of ${threshold} bytes or more in ${location}, over protobuf's limit of 2 GiB`,
    );
  }
  return plan;
}

/** The plan of an .onnx output whose initializers `targets` converts (see ModelOutputOptions). */
function planModelOutput(input: TensorFile, targets: ReadonlyMap<FileTensor, DType>, outPath: string, opts: ModelOutputOptions): Promise<OutputPlan> {
  return chooseModelLayout(outPath, opts, (side, threshold) => planModel(input, targets, outPath, side, threshold));
}

/** A TensorProto whose data is bytes [offset, offset + length) of the side file `location`. */
function externalTensorProto(name: string, t: DType, shape: readonly number[], extra: Uint8Array, location: string, offset: number, length: number): Uint8Array {
  const w = new WireWriter(96 + 3 * (name.length + location.length) + extra.length);
  for (const d of shape) w.int64Field(1, d);
  w.uint32Field(2, t.onnx);
  if (name) w.stringField(8, name, "tensor name");
  w.raw(extra);
  // onnx writes location, offset, length in this order; offset and length as decimal strings.
  for (const [key, value] of [["location", location], ["offset", String(offset)], ["length", String(length)]]) {
    w.fork(13).stringField(1, key).stringField(2, value, "external data location").join();
  }
  w.uint32Field(14, 1);
  return w.finish().slice();
}

/**
 * A model with the initializers in `targets` rewritten (dims, data_type, name, their other fields
 * as they were, and the converted raw_data) and every other byte copied: nodes, inputs, outputs,
 * metadata and the other initializers are untouched, so the graph is not updated.
 *
 * With `side`, every initializer of `threshold` bytes or more (converted or not, but not strings,
 * which have no raw layout, nor segmented ones) is rewritten to refer to its bytes in the side file
 * instead, and its data written there.
 */
async function planModel(
  input: TensorFile, targets: ReadonlyMap<FileTensor, DType>, outPath: string,
  side: SidePlacement, threshold: number,
): Promise<OutputPlan> {
  if (input.format !== "onnx") {
    throw fileError("UNSUPPORTED_TYPE", outPath, `an .onnx output needs an .onnx input to take the graph from; ${input.path} is ${input.format}`);
  }
  const model = input as OnnxModelFile;
  const { graph, initializers } = model.layout;
  /**
   * `head`: the initializer field's tag and length; `message`: its TensorProto up to raw_data's
   * bytes (or whole, when its data is in the side file); `bodyLength`: the whole TensorProto.
   */
  const rewritten: (ReturnType<typeof initializerField> & { scanned: (typeof initializers)[number] })[] = [];
  const layout = new SideLayout();
  for (let i = 0; i < initializers.length; i++) {
    const source = model.tensors[i];
    const scanned = initializers[i];
    const dtype = targets.get(source) ?? source.dtype;
    const byteLength = dtype.kind === "string" ? 0 : rawByteLength(dtype, source.size);
    const toSide = side !== undefined && dtype.kind !== "string" && scanned.storage !== "segment" && byteLength >= threshold;
    // An initializer with external data in the input is otherwise written inline, converted or
    // not: its location is relative to the input's folder, which need not be the output's.
    if (!toSide && !targets.has(source) && scanned.storage !== "external") continue;
    const extraParts = await Promise.all(scanned.extras.map(([s, e]) => model.file.read(s, e - s)));
    const extra = new Uint8Array(extraParts.reduce((n, p) => n + p.length, 0));
    extraParts.reduce((at, p) => (extra.set(p, at), at + p.length), 0);
    const t = { source, name: source.name, dtype, shape: source.shape, size: source.size, encoding: "raw" as const, byteLength };
    rewritten.push({ scanned, ...initializerField(t, extra, side, layout, toSide) });
  }
  // Whole fields, length prefixes included: a message that crosses 2^7, 2^14, ... bytes gains or
  // loses a byte of prefix, which the graph's own length must count.
  let graphLength = graph.end - graph.contentStart;
  for (const r of rewritten) graphLength += r.head.length + r.bodyLength - (r.scanned.end - r.scanned.fieldStart);
  const file = new FileLayout();
  const copy = (from: number, to: number): void => {
    if (to > from) file.push({ kind: "copy", from, length: to - from });
  };
  copy(0, graph.fieldStart);
  file.push({ kind: "bytes", data: lengthDelimitedTag(7, graphLength) });
  let at = graph.contentStart;
  for (const r of rewritten) {
    copy(at, r.scanned.fieldStart);
    file.push({ kind: "bytes", data: r.head });
    file.push({ kind: "bytes", data: r.message });
    if (r.inline) file.push({ kind: "tensor", tensor: r.inline });
    at = r.scanned.end;
  }
  copy(at, graph.end);
  copy(graph.end, model.size);
  const lists = model.tensors.map((t): TensorEntry => ({ name: t.name, dtype: targets.get(t) ?? t.dtype, shape: t.shape }));
  return finishModelPlan(file, lists, side, layout, outPath);
}

/**
 * One field of a rewritten model's main graph, in order (see planEditedModel).
 * @example { kind: "initializer", source, name: "w", dtype: dtype("float16"), shape: [4, 4], extra: new Uint8Array(0) }
 */
export type GraphPiece =
  /** Encoded graph fields (tags included), written as they are. */
  | { readonly kind: "bytes"; readonly data: Uint8Array }
  /** An initializer whose data is read from `source` (converted when `dtype` differs from its type). */
  | {
    readonly kind: "initializer";
    readonly source: FileTensor;
    readonly name: string;
    readonly dtype: DType;
    readonly shape: readonly number[];
    /** Its TensorProto's fields other than dims, data_type, name and the data, encoded. */
    readonly extra: Uint8Array;
    /** Fields written after raw_data when the data is inline (data_location DEFAULT), encoded. */
    readonly inlineSuffix?: Uint8Array;
  };

/**
 * A model rewritten in memory except for the data of some initializers: the ModelProto's bytes
 * before its graph field and after it, and the graph's fields.
 * @example { head: irAndOpsets, graph: [{ kind: "bytes", data: nodes }, wPiece], tail: new Uint8Array(0), lists: [{ name: "w", dtype, shape: [4, 4] }] }
 */
export interface EditedModel {
  readonly head: Uint8Array;
  readonly graph: readonly GraphPiece[];
  readonly tail: Uint8Array;
  /** Every initializer of the main graph, in order, as the output must list it. */
  readonly lists: readonly TensorEntry[];
}

/**
 * The plan of an .onnx output holding `model`: its "initializer" pieces' data is written inline
 * or to a side file as `opts` says (see ModelOutputOptions), every other byte as given.
 * @example
 * await planEditedModel({ head, graph: [{ kind: "bytes", data: nodes }, { kind: "initializer", source, name: "w", dtype, shape: [4], extra }], tail, lists }, "out.onnx", {});
 * // plan.size: head, graph and tail, with w's 4 elements inline
 * @throws TensorcastError UNSUPPORTED_TYPE when the model cannot be written as asked (over 2 GiB inline).
 */
export function planEditedModel(model: EditedModel, outPath: string, opts: ModelOutputOptions): Promise<OutputPlan> {
  return chooseModelLayout(outPath, opts, (side, threshold) => layEditedModel(model, outPath, side, threshold));
}

function layEditedModel(model: EditedModel, outPath: string, side: SidePlacement, threshold: number): OutputPlan {
  const graph: Segment[] = [];
  const layout = new SideLayout();
  for (const p of model.graph) {
    if (p.kind === "bytes") {
      graph.push(p);
      continue;
    }
    const byteLength = rawByteLength(p.dtype, p.source.size);
    const t = { source: p.source, name: p.name, dtype: p.dtype, shape: p.shape, size: p.source.size, encoding: "raw" as const, byteLength };
    const f = initializerField(t, p.extra, side, layout, byteLength >= threshold, p.inlineSuffix);
    graph.push({ kind: "bytes", data: f.head }, { kind: "bytes", data: f.message });
    // Its offset in the file is known once the graph's own length prefix is.
    if (f.inline) graph.push({ kind: "tensor", tensor: f.inline });
    if (f.inline && p.inlineSuffix) graph.push({ kind: "bytes", data: p.inlineSuffix });
  }
  const file = new FileLayout();
  file.push({ kind: "bytes", data: model.head });
  file.push({ kind: "bytes", data: lengthDelimitedTag(7, graph.reduce((n, s) => n + segmentLength(s), 0)) });
  for (const s of graph) file.push(s);
  file.push({ kind: "bytes", data: model.tail });
  return finishModelPlan(file, model.lists, side, layout, outPath);
}

/** An .onnx output's plan from its laid-out segments and side file. */
function finishModelPlan(file: FileLayout, lists: readonly TensorEntry[], side: SidePlacement, layout: SideLayout, outPath: string): OutputPlan {
  if (!Number.isSafeInteger(file.size) || !Number.isSafeInteger(layout.size)) throw new TensorcastError("INVALID_DATA", `${outPath}: the output would be too large`);
  const external = side && { ...side, tensors: layout.tensors, size: layout.size };
  return { format: "onnx", segments: file.segments, tensors: [...file.tensors, ...layout.tensors], lists, size: file.size, external };
}
