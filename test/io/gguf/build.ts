/**
 * GGUF files built byte by byte for the hostile-input tests and the fuzz class: every field can be
 * given a value no writer would produce (a count past the file, a negative dimension, a removed
 * type id, an offset off the running sum), so each of gguf.cpp's checks can be reached alone.
 */

export interface KvSpec {
  key: string | Uint8Array;
  /** GGUF value type id. */
  type: number;
  /** The value's bytes as they follow the type (built with the helpers below). */
  value: Uint8Array;
}

export interface TensorSpec {
  name: string | Uint8Array;
  /** GGML order; bigint to reach 64-bit edge values. */
  dims: readonly (number | bigint)[];
  /** Dimension count written, when it differs from dims.length. */
  nDims?: number;
  typeId: number;
  /** Default: the running padded sum. */
  offset?: number | bigint;
}

export interface GgufSpec {
  version?: number;
  bigEndian?: boolean;
  /** Written counts, when they differ from the lists'. */
  nTensors?: bigint;
  nKv?: bigint;
  kv?: readonly KvSpec[];
  tensors?: readonly TensorSpec[];
  /** general.alignment as the data section is laid out (the key itself goes in `kv`). */
  alignment?: number;
  /** Bytes of each tensor's data (default: bytesFor with its type's size), or the data section whole. */
  data?: Uint8Array;
  /** Cut the file to this many bytes. */
  truncate?: number;
}

const SIZES: Record<number, [number, number]> = {
  0: [1, 4], 1: [1, 2], 2: [32, 18], 3: [32, 20], 6: [32, 22], 7: [32, 24], 8: [32, 34], 9: [32, 36], 10: [256, 84], 11: [256, 110], 12: [256, 144],
  13: [256, 176], 14: [256, 210], 15: [256, 292], 24: [1, 1], 25: [1, 2], 26: [1, 4], 27: [1, 8], 28: [1, 8], 30: [1, 2], 39: [32, 17],
};

export class Bytes {
  private parts: number[] = [];
  constructor(readonly le = true) {}
  u8(v: number): this { this.parts.push(v & 0xff); return this; }
  raw(b: Uint8Array): this { for (const x of b) this.parts.push(x); return this; }
  private num(bytes: number, set: (v: DataView) => void): this {
    const d = new DataView(new ArrayBuffer(bytes));
    set(d);
    return this.raw(new Uint8Array(d.buffer));
  }
  u16(v: number): this { return this.num(2, (d) => d.setUint16(0, v, this.le)); }
  i16(v: number): this { return this.num(2, (d) => d.setInt16(0, v, this.le)); }
  u32(v: number): this { return this.num(4, (d) => d.setUint32(0, v >>> 0, this.le)); }
  i32(v: number): this { return this.num(4, (d) => d.setInt32(0, v, this.le)); }
  f32(v: number): this { return this.num(4, (d) => d.setFloat32(0, v, this.le)); }
  f64(v: number): this { return this.num(8, (d) => d.setFloat64(0, v, this.le)); }
  u64(v: number | bigint): this { return this.num(8, (d) => d.setBigUint64(0, BigInt.asUintN(64, BigInt(v)), this.le)); }
  str(s: string | Uint8Array, length?: number | bigint): this {
    const b = typeof s === "string" ? new TextEncoder().encode(s) : s;
    return this.u64(length ?? b.length).raw(b);
  }
  get length(): number { return this.parts.length; }
  bytes(): Uint8Array { return Uint8Array.from(this.parts); }
}

/** A value's bytes in the given byte order. */
export const val = {
  u32: (v: number, le = true) => new Bytes(le).u32(v).bytes(),
  i32: (v: number, le = true) => new Bytes(le).i32(v).bytes(),
  u16: (v: number, le = true) => new Bytes(le).u16(v).bytes(),
  u8: (v: number) => new Bytes().u8(v).bytes(),
  str: (s: string | Uint8Array, le = true, length?: number | bigint) => new Bytes(le).str(s, length).bytes(),
  /** An array: item type, count, then the items' bytes. */
  arr: (itemType: number, count: number | bigint, items: Uint8Array = new Uint8Array(0), le = true) => new Bytes(le).u32(itemType).u64(count).raw(items).bytes(),
};

/** Bytes a tensor of `typeId` with GGML dims `dims` takes (0 for an unknown type). */
export function bytesFor(typeId: number, dims: readonly (number | bigint)[]): number {
  const [block, size] = SIZES[typeId] ?? [1, 0];
  const n = dims.reduce<number>((a, b) => a * Number(b), 1);
  return (n / block) * size;
}

/** The file `spec` describes. */
export function buildGguf(spec: GgufSpec): Uint8Array {
  const le = !spec.bigEndian;
  const b = new Bytes(le);
  const kv = spec.kv ?? [];
  const tensors = spec.tensors ?? [];
  const alignment = spec.alignment ?? 32;
  b.raw(new TextEncoder().encode("GGUF")).u32(spec.version ?? 3);
  b.u64(spec.nTensors ?? BigInt(tensors.length)).u64(spec.nKv ?? BigInt(kv.length));
  for (const e of kv) b.str(e.key).u32(e.type).raw(e.value);
  let running = 0;
  const sizes: number[] = [];
  for (const t of tensors) {
    b.str(t.name).u32(t.nDims ?? t.dims.length);
    for (const d of t.dims) b.u64(d);
    b.u32(t.typeId);
    b.u64(t.offset ?? running);
    const size = bytesFor(t.typeId, t.dims);
    sizes.push(size);
    running += Math.ceil(size / alignment) * alignment;
  }
  while (tensors.length > 0 && b.length % alignment !== 0) b.u8(0);
  // Sizes no file could hold (the dimension and overflow cases) get no data: the check comes first.
  if (spec.data) b.raw(spec.data);
  else if (sizes.every((n) => Number.isSafeInteger(n) && n <= 1 << 24)) {
    sizes.forEach((size, i) => {
      for (let k = 0; k < size; k++) b.u8((k * 7 + i) & 0x3f);
      if (i < sizes.length - 1) while (b.length % alignment !== 0) b.u8(0);
    });
  }
  const out = b.bytes();
  return spec.truncate === undefined ? out : out.subarray(0, spec.truncate);
}
