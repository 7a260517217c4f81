/**
 * The layout of an output file, decided before any tensor is converted: the header bytes, which
 * byte ranges are copied from the input, and where each tensor's bytes go. Every size is known in
 * advance (a type change changes a tensor's length predictably), so tensors can be written at their
 * final positions in any order, in parallel.
 */
import { TensorcastError, type DType } from "../../index.js";
import { WireWriter } from "../../io/onnx/wire-writer.js";
import { WIRE_LEN } from "../../io/onnx/wire.js";
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
  /** Where its bytes start in the output file. */
  readonly offset: number;
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
  input: TensorFile, format: FileFormat, targets: ReadonlyMap<FileTensor, DType>, outPath: string,
): Promise<OutputPlan> {
  if (format === "onnx") return planModel(input, targets, outPath);
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
  const segments: Segment[] = [{ kind: "bytes", data: header }];
  const outputs: OutputTensor[] = [];
  let offset = header.length;
  for (const [source, dtype, encoding] of tensors) {
    const byteLength = encodedLength(dtype, source.size, encoding);
    const tensor: OutputTensor = { source, name: source.name, dtype, shape: source.shape, size: source.size, encoding, byteLength, offset };
    segments.push({ kind: "tensor", tensor });
    outputs.push(tensor);
    offset += byteLength;
  }
  return { format, segments, tensors: outputs, lists: outputs, size: offset };
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

/**
 * A model with the initializers in `targets` rewritten (dims, data_type, name, their other fields
 * as they were, and the converted raw_data) and every other byte copied: nodes, inputs, outputs,
 * metadata and the other initializers are untouched, so the graph is not updated.
 */
async function planModel(input: TensorFile, targets: ReadonlyMap<FileTensor, DType>, outPath: string): Promise<OutputPlan> {
  if (input.format !== "onnx") {
    throw fileError("UNSUPPORTED_TYPE", outPath, `an .onnx output needs an .onnx input to take the graph from; ${input.path} is ${input.format}`);
  }
  const model = input as OnnxModelFile;
  const { graph, initializers } = model.layout;
  /** `head`: the initializer field's tag and length; `message`: its TensorProto up to raw_data's bytes; `bodyLength`: the whole TensorProto. */
  const rewritten: { scanned: (typeof initializers)[number]; source: FileTensor; dtype: DType; head: Uint8Array; message: Uint8Array; bodyLength: number }[] = [];
  for (let i = 0; i < initializers.length; i++) {
    const source = model.tensors[i];
    const scanned = initializers[i];
    // An initializer with external data is written inline, converted or not: its location is
    // relative to the input's folder, which need not be the output's.
    const dtype = targets.get(source) ?? (scanned.storage === "external" ? source.dtype : undefined);
    if (!dtype) continue;
    const extraParts = await Promise.all(scanned.extras.map(([s, e]) => model.file.read(s, e - s)));
    const extra = new Uint8Array(extraParts.reduce((n, p) => n + p.length, 0));
    extraParts.reduce((at, p) => (extra.set(p, at), at + p.length), 0);
    const byteLength = rawByteLength(dtype, source.size);
    const message = tensorProtoPrefix(source.name, dtype, source.shape, byteLength, extra);
    const bodyLength = message.length + byteLength;
    rewritten.push({ scanned, source, dtype, head: lengthDelimitedTag(5, bodyLength), message, bodyLength });
  }
  // Whole fields, length prefixes included: a message that crosses 2^7, 2^14, ... bytes gains or
  // loses a byte of prefix, which the graph's own length must count.
  let graphLength = graph.end - graph.contentStart;
  for (const r of rewritten) graphLength += r.head.length + r.bodyLength - (r.scanned.end - r.scanned.fieldStart);
  const segments: Segment[] = [];
  const outputs: OutputTensor[] = [];
  let offset = 0;
  const push = (s: Segment): void => {
    segments.push(s);
    offset += s.kind === "bytes" ? s.data.length : s.kind === "copy" ? s.length : s.tensor.byteLength;
  };
  const copy = (from: number, to: number): void => {
    if (to > from) push({ kind: "copy", from, length: to - from });
  };
  copy(0, graph.fieldStart);
  push({ kind: "bytes", data: lengthDelimitedTag(7, graphLength) });
  let at = graph.contentStart;
  for (const r of rewritten) {
    copy(at, r.scanned.fieldStart);
    push({ kind: "bytes", data: r.head });
    push({ kind: "bytes", data: r.message });
    const tensor: OutputTensor = {
      source: r.source, name: r.source.name, dtype: r.dtype, shape: r.source.shape, size: r.source.size,
      encoding: "raw", byteLength: rawByteLength(r.dtype, r.source.size), offset,
    };
    push({ kind: "tensor", tensor });
    outputs.push(tensor);
    at = r.scanned.end;
  }
  copy(at, graph.end);
  copy(graph.end, model.size);
  if (!Number.isSafeInteger(offset)) throw new TensorcastError("INVALID_DATA", `${outPath}: the output would be too large`);
  const lists = model.tensors.map((t): TensorEntry => ({ name: t.name, dtype: targets.get(t) ?? t.dtype, shape: t.shape }));
  return { format: "onnx", segments, tensors: outputs, lists, size: offset };
}
