/**
 * A GGUF model seen as the checkpoint transformers makes of it (`from_pretrained(DIR,
 * gguf_file=...)`): each tensor under its transformers name, float32, with what llama.cpp's
 * converter did to it undone (src/io/gguf-hf's plan: Q/K rows un-permuted, Gemma's norms -1).
 *
 * Values are the ones transformers loads: block types dequantized bit for bit (src/ggml, as
 * gguf-py's dequantize), F16 and BF16 widened exactly as numpy's astype(float32) does (a NaN keeps
 * its payload and its signalling bit), F32 as stored; then the transform in float32.
 *
 * Reading is by chunks of the output: a chunk reads only the source range it needs (for an
 * un-permuted Q/K, the whole heads its rows fall in), so memory follows the chunk, never the tensor.
 */
import { dtype, TensorcastError } from "../../index.js";
import type { HfConfigOptions } from "../../io/gguf-hf/config.js";
import { ggufModelToHf } from "../../io/gguf-hf/model.js";
import type { HfPlan, HfTensorPlan } from "../../io/gguf-hf/plan.js";
import { applyTransform } from "../../io/gguf-hf/transforms.js";
import { openGguf, type GgufFileTensor, type GgufTensorFile } from "./gguf.js";
import { checkReadRange, type FileTensor, type TensorFile } from "./tensors.js";

const FLOAT32 = dtype("float32");

/** float16 bits -> float32 bits, exactly (numpy's npy_halfbits_to_floatbits: NaN payloads kept). */
export function halfBitsToFloatBits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >> 10) & 0x1f;
  let man = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (man << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (man << 13)) >>> 0;
  if (man === 0) return sign >>> 0;
  // subnormal: normalize
  let e = 113;
  while ((man & 0x400) === 0) {
    man <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((man & 0x3ff) << 13)) >>> 0;
}

/** Reads elements [start, start + count) of `t` as float32 into `dst`. */
async function readFloat32(t: GgufFileTensor, start: number, count: number, dst: Float32Array): Promise<void> {
  if (count === 0) return;
  const raw = await t.read(start, count);
  const name = t.dtype.name;
  if (name === "float32") {
    new Uint8Array(dst.buffer, dst.byteOffset, count * 4).set(raw);
    return;
  }
  const bits = new Uint32Array(dst.buffer, dst.byteOffset, count);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (name === "float16") {
    for (let i = 0; i < count; i++) bits[i] = halfBitsToFloatBits(view.getUint16(2 * i, true));
  } else if (name === "bfloat16") {
    for (let i = 0; i < count; i++) bits[i] = view.getUint16(2 * i, true) << 16;
  } else if (name === "float64") {
    for (let i = 0; i < count; i++) dst[i] = view.getFloat64(8 * i, true);
  } else {
    throw new TensorcastError("UNSUPPORTED_TYPE", `GGUF tensor ${JSON.stringify(t.name)} is ${t.ggml.type}; transformers' tensors are floating-point`);
  }
}

/** One transformers tensor read from its GGUF tensor. */
export class GgufHfTensor implements FileTensor {
  readonly name: string;
  readonly dtype = FLOAT32;
  readonly shape: readonly number[];
  readonly size: number;
  readonly byteLength: number;
  readonly plan: HfTensorPlan;
  readonly source: GgufFileTensor;

  constructor(plan: HfTensorPlan, source: GgufFileTensor) {
    this.name = plan.hfName;
    this.shape = plan.shape;
    this.size = source.size;
    this.byteLength = source.size * 4;
    this.plan = plan;
    this.source = source;
  }

  async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    const out = into !== undefined && into.length === count * 4 && into.byteOffset % 4 === 0 ? into : new Uint8Array(count * 4);
    const values = new Float32Array(out.buffer, out.byteOffset, count);
    const t = this.plan.transform;
    if (t.kind === "unpermute-rotary") {
      await this.#readUnpermuted(start, count, values, t.heads);
      return out;
    }
    await readFloat32(this.source, start, count, values);
    if (t.kind === "offset") values.set(applyTransform(t, [count], values));
    return out;
  }

  /** Reads the whole heads that rows [start, start + count) fall in, and moves their rows back. */
  async #readUnpermuted(start: number, count: number, values: Float32Array, heads: number): Promise<void> {
    if (count === 0) return;
    const rows = this.shape[0] ?? 1;
    const rowLen = this.size / rows;
    const headLen = (rows / heads) * rowLen;
    const firstHead = Math.floor(start / headLen);
    const lastHead = Math.floor((start + count - 1) / headLen);
    const from = firstHead * headLen;
    const span = (lastHead + 1) * headLen - from;
    const stored = new Float32Array(span);
    await readFloat32(this.source, from, span, stored);
    const shape = [span / rowLen, ...this.shape.slice(1)];
    const moved = applyTransform({ kind: "unpermute-rotary", heads: lastHead - firstHead + 1 }, shape.length > 1 ? shape : [span], stored);
    values.set(moved.subarray(start - from, start - from + count));
  }
}

/** An open GGUF model with its plan and its tensors under transformers' names, in the plan's order. */
export interface GgufHfView {
  readonly gguf: GgufTensorFile;
  readonly plan: HfPlan;
  readonly tensors: readonly GgufHfTensor[];
}

/** The view of an open GGUF model: UNSUPPORTED_TYPE for an architecture the plan does not convert. */
export function ggufHfView(gguf: GgufTensorFile, options: HfConfigOptions = {}): GgufHfView {
  const plan = ggufModelToHf(gguf.model, options);
  const byName = new Map(gguf.tensors.map((t) => [t.name, t as GgufFileTensor]));
  const tensors = plan.tensors.map((p) => new GgufHfTensor(p, byName.get(p.from)!));
  return { gguf, plan, tensors };
}

/** Opens `path` (a GGUF model, split or not) as transformers' tensors. Close `gguf` when done. */
export async function openGgufHf(path: string, options: HfConfigOptions = {}): Promise<GgufHfView> {
  const gguf = await openGguf(path);
  try {
    return ggufHfView(gguf, options);
  } catch (e) {
    await gguf.close();
    throw e;
  }
}

/**
 * `tensors` as a TensorFile (safetensors' `__metadata__` as save_pretrained writes it), its `size`
 * the GGUF bytes they are read from. Closing it closes nothing: the GGUF stays the caller's.
 */
export function hfTensorFile(view: GgufHfView, tensors: readonly GgufHfTensor[] = view.tensors): TensorFile & { readonly parts: readonly string[] } {
  return {
    path: view.gguf.path, format: "gguf", parts: view.gguf.parts,
    size: tensors.reduce((n, t) => n + t.source.ggml.bytes, 0),
    tensors, metadata: { format: "pt" },
    close: async () => undefined,
  };
}

/**
 * `file` as transformers' tensors when it is a GGUF model of a convertible architecture and
 * `other` (a Hugging Face folder or file) has none of its GGUF names but some of transformers'
 * names for them; else `file` itself. Closing the result closes `file`.
 */
export function hfNamedFor(file: TensorFile, other: TensorFile): TensorFile {
  if (file.format !== "gguf" || other.format === "gguf") return file;
  const theirs = new Set(other.tensors.map((t) => t.name));
  if (file.tensors.some((t) => theirs.has(t.name))) return file;
  let view: GgufHfView;
  try {
    view = ggufHfView(file as GgufTensorFile);
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE") return file;
    throw e;
  }
  return view.tensors.some((t) => theirs.has(t.name)) ? { ...hfTensorFile(view), close: () => file.close() } : file;
}
