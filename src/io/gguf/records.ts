/**
 * A GGUF model's tensors as records: (name, GGML type, row-major shape, bytes), one tensor at a
 * time, or any run of whole blocks of one, so a caller streams a tensor larger than memory in
 * pieces. Bytes are always GGML's little-endian block layout (what src/ggml decodes): in a
 * big-endian file, the multi-byte fields of each block are swapped back.
 */
import type { GgmlType } from "../../ggml/types.js";
import { dequantizeGgml } from "../../ggml/dequantize.js";
import { TensorcastError } from "../../errors.js";
import { Tensor } from "../../tensor.js";
import { cast } from "../../ops/cast.js";
import type { GgufModel, GgufModelTensor } from "./split.js";

export interface GgufRecord {
  readonly name: string;
  readonly ggmlType: GgmlType;
  /** Row-major (GGML's dimensions reversed). */
  readonly shape: readonly number[];
  /** The tensor's blocks, little-endian. */
  readonly bytes: Uint8Array;
}

/**
 * The types whose big-endian layout is defined: the plain ones (each element swapped) and those
 * gguf-py's gguf_convert_endian.py converts (each multi-byte field of a block swapped). For any
 * other type, which field is stored how in a big-endian file is nobody's rule.
 */
const BIG_ENDIAN_BLOCKS = new Set(["F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "Q1_0", "TQ2_0", "MXFP4", "NVFP4"]);

const KIND_BYTES: Readonly<Record<string, number>> = { f16: 2, f32: 4, u8: 1, i8: 1, u16: 2, i16: 2, i32: 4, i64: 8, f64: 8, e8m0: 1, ue4m3: 1 };

/** Swaps each multi-byte field of every block of `t` in `b`, in place. */
function swapBlocks(t: GgmlType, b: Uint8Array): void {
  for (let block = 0; block + t.typeSize <= b.length; block += t.typeSize) {
    for (const f of t.fields) {
      const size = KIND_BYTES[f.kind];
      if (size === 1) continue;
      for (let k = 0; k < f.count; k++) {
        const at = block + f.offset + k * size;
        for (let x = at, y = at + size - 1; x < y; x++, y--) {
          const v = b[x];
          b[x] = b[y];
          b[y] = v;
        }
      }
    }
  }
}

/**
 * Blocks [firstBlock, firstBlock + blocks) of tensor `t` of `model`, little-endian. Memory is
 * the run asked for, never the tensor.
 * @throws TensorcastError INVALID_ATTRIBUTE for a run outside the tensor; UNSUPPORTED_TYPE for a
 *         block type of a big-endian file whose layout is not defined (see BIG_ENDIAN_BLOCKS).
 */
export async function readGgufBlocks(model: GgufModel, t: GgufModelTensor, firstBlock: number, blocks: number): Promise<Uint8Array> {
  const type = t.ggmlType;
  const total = t.byteLength / type.typeSize;
  if (!Number.isSafeInteger(firstBlock) || !Number.isSafeInteger(blocks) || firstBlock < 0 || blocks < 0 || firstBlock + blocks > total) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `tensor ${JSON.stringify(t.name)} has ${total} ${type.name} blocks; blocks [${firstBlock}, ${firstBlock} + ${blocks}) are not among them`);
  }
  const file = model.files[t.split];
  if (!file.littleEndian && !BIG_ENDIAN_BLOCKS.has(type.name)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${file.name}: tensor ${JSON.stringify(t.name)}: a big-endian file's ${type.name} blocks have no defined layout (gguf_convert_endian.py converts ${[...BIG_ENDIAN_BLOCKS].join(", ")})`);
  }
  const bytes = await file.source.read(t.position + firstBlock * type.typeSize, blocks * type.typeSize);
  if (!file.littleEndian) swapBlocks(type, bytes);
  return bytes;
}

/**
 * Each tensor of `model` in order, its whole data read when the iterator reaches it (memory: one
 * tensor; use readGgufBlocks for runs of a larger one).
 * @example for await (const r of ggufRecords(model)) console.log(r.name, r.ggmlType.name, r.shape)
 */
export async function* ggufRecords(model: GgufModel): AsyncGenerator<GgufRecord> {
  for (const t of model.tensors) {
    const bytes = await readGgufBlocks(model, t, 0, t.byteLength / t.ggmlType.typeSize);
    yield { name: t.name, ggmlType: t.ggmlType, shape: t.shape, bytes };
  }
}

/**
 * A record's values as a Tensor: float32 from GGML's decoder (bit for bit ggml's to_float), then,
 * when `to` is given, bfloat16 or float16 by Cast (one rounding from the float32 value).
 * @example ggufTensor(record, "bfloat16").shape // the record's row-major shape
 * @throws TensorcastError UNSUPPORTED_TYPE for Q8_1 (ggml has no decoder for it either).
 */
export function ggufTensor(r: GgufRecord, to?: "float32" | "bfloat16" | "float16"): Tensor {
  const values = dequantizeGgml(r.ggmlType, r.bytes);
  const x = Tensor.fromStorage(values, "float32", r.shape);
  return to === undefined || to === "float32" ? x : cast(x, to);
}
