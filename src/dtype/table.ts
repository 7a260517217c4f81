/**
 * One entry per data type: its ONNX number, every spelling it goes by, its width, its kind, its
 * limits, its JS storage and, for small floats, the traits that drive the generic codec.
 * Adding a type is one entry here (plus its traits or packing); everything else reads this table.
 */
import { TensorcastError } from "../errors.js";
import type { FloatFormat } from "./minifloat.js";
import { closestNames } from "./suggest.js";

/** Canonical data-type names, in ONNX `TensorProto.DataType` order. */
export type DTypeName =
  | "float32" | "uint8" | "int8" | "uint16" | "int16" | "int32" | "int64" | "string" | "bool"
  | "float16" | "float64" | "uint32" | "uint64" | "complex64" | "complex128" | "bfloat16"
  | "float8e4m3fn" | "float8e4m3fnuz" | "float8e5m2" | "float8e5m2fnuz" | "uint4" | "int4"
  | "float4e2m1" | "float8e8m0" | "uint2" | "int2" | "float6e2m3" | "float6e3m2";

/** What a type's values are. Sub-byte integers are "int"/"uint"; every small float is "float". */
export type DTypeKind = "bool" | "int" | "uint" | "float" | "string" | "complex";

/** The JS container each type is stored in. */
export interface StorageMap {
  float32: Float32Array; uint8: Uint8Array; int8: Int8Array; uint16: Uint16Array; int16: Int16Array;
  int32: Int32Array; int64: BigInt64Array; string: string[]; bool: Uint8Array; float16: Uint16Array;
  float64: Float64Array; uint32: Uint32Array; uint64: BigUint64Array;
  /** Interleaved (re, im) pairs: 2 * size entries. */
  complex64: Float32Array;
  /** Interleaved (re, im) pairs: 2 * size entries. */
  complex128: Float64Array;
  bfloat16: Uint16Array;
  float8e4m3fn: Uint8Array; float8e4m3fnuz: Uint8Array; float8e5m2: Uint8Array; float8e5m2fnuz: Uint8Array;
  float8e8m0: Uint8Array;
  /** Packed: two per byte, element 0 in the low nibble. */
  uint4: Uint8Array; int4: Uint8Array; float4e2m1: Uint8Array;
  /** Packed: four per byte, element 0 in the low bits. */
  uint2: Uint8Array; int2: Uint8Array;
  /** Packed: four per three bytes, element 0 in the low bits. */
  float6e2m3: Uint8Array; float6e3m2: Uint8Array;
}
export type StorageOf<N extends DTypeName> = StorageMap[N];
export type Storage = StorageMap[DTypeName];

/** The typed-array constructor behind each fixed-width storage. */
export type ArrayKind =
  | "Float32Array" | "Float64Array" | "Int8Array" | "Uint8Array" | "Int16Array" | "Uint16Array"
  | "Int32Array" | "Uint32Array" | "BigInt64Array" | "BigUint64Array" | "Array";

export interface DType<N extends DTypeName = DTypeName> {
  readonly name: N;
  /** The `TensorProto.DataType` number. */
  readonly onnx: number;
  /** The `TensorProto.DataType` enum name, e.g. "FLOAT16". */
  readonly onnxName: string;
  /** Bits per element (complex64: 64 for the pair). Strings have no fixed width: 0. */
  readonly bits: number;
  readonly kind: DTypeKind;
  /** Other spellings accepted by `dtype()`: OpenVINO, TensorFlow, NumPy / ml_dtypes, safetensors, and the "fp16" / "bf16" of PyTorch users. */
  readonly aliases: readonly string[];
  /** The container, and whether elements are packed several per byte. */
  readonly array: ArrayKind;
  readonly packed: boolean;
  /** Smallest and largest finite value (bigint for 64-bit integers). Undefined for string/complex. */
  readonly min?: number | bigint;
  readonly max?: number | bigint;
  /** For floats stored as codes (and float32): the traits of the generic codec. */
  readonly format?: FloatFormat;
  /** For floats: smallest positive normal and subnormal value. */
  readonly minNormal?: number;
  readonly minSubnormal?: number;
}

type Entry = Omit<DType, "packed"> & { packed?: boolean };

// Float traits. Each limit is derived in its comment; tests recompute every one from the codec.
const F16: FloatFormat = {
  expBits: 5, manBits: 10, bias: 15, signed: true, subnormals: true, inf: true, nan: "ieee",
  overflow: "inf", maxCode: 0x7bff, // 0_11110_1111111111 = (2 - 2^-10) * 2^15 = 65504
};
const BF16: FloatFormat = {
  expBits: 8, manBits: 7, bias: 127, signed: true, subnormals: true, inf: true, nan: "ieee",
  overflow: "inf", maxCode: 0x7f7f, // 0_11111110_1111111 = (2 - 2^-7) * 2^127 ~ 3.3895e38
};
const F32: FloatFormat = {
  expBits: 8, manBits: 23, bias: 127, signed: true, subnormals: true, inf: true, nan: "ieee",
  overflow: "inf", maxCode: 0x7f7fffff, // (2 - 2^-23) * 2^127 ~ 3.4028235e38
};
const E4M3FN: FloatFormat = {
  expBits: 4, manBits: 3, bias: 7, signed: true, subnormals: true, inf: false, nan: "allOnes",
  overflow: "saturable", maxCode: 0x7e, // 0_1111_110 = 1.75 * 2^8 = 448
};
const E4M3FNUZ: FloatFormat = {
  expBits: 4, manBits: 3, bias: 8, signed: true, subnormals: true, inf: false, nan: "negativeZero",
  overflow: "saturable", maxCode: 0x7f, // 0_1111_111 = 1.875 * 2^7 = 240
};
const E5M2: FloatFormat = {
  expBits: 5, manBits: 2, bias: 15, signed: true, subnormals: true, inf: true, nan: "ieee",
  overflow: "saturable", maxCode: 0x7b, // 0_11110_11 = 1.75 * 2^15 = 57344
};
const E5M2FNUZ: FloatFormat = {
  expBits: 5, manBits: 2, bias: 16, signed: true, subnormals: true, inf: false, nan: "negativeZero",
  overflow: "saturable", maxCode: 0x7f, // 0_11111_11 = 1.75 * 2^15 = 57344
};
const E8M0: FloatFormat = {
  expBits: 8, manBits: 0, bias: 127, signed: false, subnormals: false, inf: false, nan: "allOnes",
  overflow: "saturable", maxCode: 0xfe, // 11111110 = 2^(254 - 127) = 2^127
};
const E2M1: FloatFormat = {
  expBits: 2, manBits: 1, bias: 1, signed: true, subnormals: true, inf: false, nan: "none",
  overflow: "clamp", maxCode: 0x7, // 0_11_1 = 1.5 * 2^2 = 6
};
const E2M3: FloatFormat = {
  expBits: 2, manBits: 3, bias: 1, signed: true, subnormals: true, inf: false, nan: "none",
  overflow: "clamp", maxCode: 0x1f, // 0_11_111 = 1.875 * 2^2 = 7.5
};
const E3M2: FloatFormat = {
  expBits: 3, manBits: 2, bias: 3, signed: true, subnormals: true, inf: false, nan: "none",
  overflow: "clamp", maxCode: 0x1f, // 0_111_11 = 1.75 * 2^4 = 28
};

const ENTRIES: readonly Entry[] = [
  { name: "float32", onnx: 1, onnxName: "FLOAT", bits: 32, kind: "float", array: "Float32Array",
    aliases: ["f32", "fp32", "float", "single", "F32"], format: F32,
    min: -3.4028234663852886e38, max: 3.4028234663852886e38, // (2 - 2^-23) * 2^127
    minNormal: 2 ** -126, minSubnormal: 2 ** -149 },
  { name: "uint8", onnx: 2, onnxName: "UINT8", bits: 8, kind: "uint", array: "Uint8Array",
    aliases: ["u8", "ubyte"], min: 0, max: 255 },
  { name: "int8", onnx: 3, onnxName: "INT8", bits: 8, kind: "int", array: "Int8Array",
    aliases: ["i8", "byte"], min: -128, max: 127 },
  { name: "uint16", onnx: 4, onnxName: "UINT16", bits: 16, kind: "uint", array: "Uint16Array",
    aliases: ["u16", "ushort"], min: 0, max: 65535 },
  { name: "int16", onnx: 5, onnxName: "INT16", bits: 16, kind: "int", array: "Int16Array",
    aliases: ["i16", "short"], min: -32768, max: 32767 },
  { name: "int32", onnx: 6, onnxName: "INT32", bits: 32, kind: "int", array: "Int32Array",
    aliases: ["i32", "intc", "I32"], min: -2147483648, max: 2147483647 },
  { name: "int64", onnx: 7, onnxName: "INT64", bits: 64, kind: "int", array: "BigInt64Array",
    aliases: ["i64", "int_", "longlong", "I64"], min: -(2n ** 63n), max: 2n ** 63n - 1n },
  { name: "string", onnx: 8, onnxName: "STRING", bits: 0, kind: "string", array: "Array",
    aliases: ["str", "str_", "unicode"] },
  { name: "bool", onnx: 9, onnxName: "BOOL", bits: 8, kind: "bool", array: "Uint8Array",
    aliases: ["boolean", "bool_", "bool8"], min: 0, max: 1 },
  { name: "float16", onnx: 10, onnxName: "FLOAT16", bits: 16, kind: "float", array: "Uint16Array",
    aliases: ["f16", "fp16", "half", "F16"], format: F16,
    min: -65504, max: 65504, minNormal: 2 ** -14, minSubnormal: 2 ** -24 },
  { name: "float64", onnx: 11, onnxName: "DOUBLE", bits: 64, kind: "float", array: "Float64Array",
    // No `format`: float64 is the exact intermediate of every cast and never goes through the
    // generic codec, whose codes are exact only up to 2^53.
    aliases: ["f64", "fp64", "double", "float_", "F64"],
    min: -Number.MAX_VALUE, max: Number.MAX_VALUE, // (2 - 2^-52) * 2^1023
    minNormal: 2 ** -1022, minSubnormal: 2 ** -1074 },
  { name: "uint32", onnx: 12, onnxName: "UINT32", bits: 32, kind: "uint", array: "Uint32Array",
    aliases: ["u32", "uintc", "U32"], min: 0, max: 4294967295 },
  { name: "uint64", onnx: 13, onnxName: "UINT64", bits: 64, kind: "uint", array: "BigUint64Array",
    aliases: ["u64", "ulonglong", "U64"], min: 0n, max: 2n ** 64n - 1n },
  { name: "complex64", onnx: 14, onnxName: "COMPLEX64", bits: 64, kind: "complex", array: "Float32Array",
    aliases: ["c64", "csingle", "C64"] },
  { name: "complex128", onnx: 15, onnxName: "COMPLEX128", bits: 128, kind: "complex", array: "Float64Array",
    aliases: ["c128", "cdouble", "complex", "complex_"] },
  { name: "bfloat16", onnx: 16, onnxName: "BFLOAT16", bits: 16, kind: "float", array: "Uint16Array",
    aliases: ["bf16", "BF16"], format: BF16,
    min: -3.3895313892515355e38, max: 3.3895313892515355e38, // (2 - 2^-7) * 2^127
    minNormal: 2 ** -126, minSubnormal: 2 ** -133 },
  { name: "float8e4m3fn", onnx: 17, onnxName: "FLOAT8E4M3FN", bits: 8, kind: "float", array: "Uint8Array",
    aliases: ["f8e4m3", "float8_e4m3fn", "f8e4m3fn", "F8_E4M3"], format: E4M3FN,
    min: -448, max: 448, minNormal: 2 ** -6, minSubnormal: 2 ** -9 },
  { name: "float8e4m3fnuz", onnx: 18, onnxName: "FLOAT8E4M3FNUZ", bits: 8, kind: "float", array: "Uint8Array",
    aliases: ["float8_e4m3fnuz", "f8e4m3fnuz"], format: E4M3FNUZ,
    min: -240, max: 240, minNormal: 2 ** -7, minSubnormal: 2 ** -10 },
  { name: "float8e5m2", onnx: 19, onnxName: "FLOAT8E5M2", bits: 8, kind: "float", array: "Uint8Array",
    aliases: ["f8e5m2", "float8_e5m2", "F8_E5M2"], format: E5M2,
    min: -57344, max: 57344, minNormal: 2 ** -14, minSubnormal: 2 ** -16 },
  { name: "float8e5m2fnuz", onnx: 20, onnxName: "FLOAT8E5M2FNUZ", bits: 8, kind: "float", array: "Uint8Array",
    aliases: ["float8_e5m2fnuz", "f8e5m2fnuz"], format: E5M2FNUZ,
    min: -57344, max: 57344, minNormal: 2 ** -15, minSubnormal: 2 ** -17 },
  { name: "uint4", onnx: 21, onnxName: "UINT4", bits: 4, kind: "uint", array: "Uint8Array", packed: true,
    aliases: ["u4"], min: 0, max: 15 },
  { name: "int4", onnx: 22, onnxName: "INT4", bits: 4, kind: "int", array: "Uint8Array", packed: true,
    aliases: ["i4"], min: -8, max: 7 },
  { name: "float4e2m1", onnx: 23, onnxName: "FLOAT4E2M1", bits: 4, kind: "float", array: "Uint8Array", packed: true,
    aliases: ["f4e2m1", "float4_e2m1fn", "float4e2m1fn", "F4"], format: E2M1,
    min: -6, max: 6, minNormal: 1, minSubnormal: 0.5 },
  { name: "float8e8m0", onnx: 24, onnxName: "FLOAT8E8M0", bits: 8, kind: "float", array: "Uint8Array",
    aliases: ["f8e8m0", "float8_e8m0fnu", "float8e8m0fnu", "F8_E8M0"], format: E8M0,
    // No zero and no sign: the smallest value is code 0x00 = 2^(0 - 127).
    min: 2 ** -127, max: 2 ** 127, minNormal: 2 ** -127 },
  { name: "uint2", onnx: 25, onnxName: "UINT2", bits: 2, kind: "uint", array: "Uint8Array", packed: true,
    aliases: ["u2"], min: 0, max: 3 },
  { name: "int2", onnx: 26, onnxName: "INT2", bits: 2, kind: "int", array: "Uint8Array", packed: true,
    aliases: ["i2"], min: -2, max: 1 },
  { name: "float6e2m3", onnx: 27, onnxName: "FLOAT6E2M3", bits: 6, kind: "float", array: "Uint8Array", packed: true,
    aliases: ["f6e2m3", "float6_e2m3fn", "float6e2m3fn", "F6_E2M3"], format: E2M3,
    min: -7.5, max: 7.5, minNormal: 1, minSubnormal: 0.125 },
  { name: "float6e3m2", onnx: 28, onnxName: "FLOAT6E3M2", bits: 6, kind: "float", array: "Uint8Array", packed: true,
    aliases: ["f6e3m2", "float6_e3m2fn", "float6e3m2fn", "F6_E3M2"], format: E3M2,
    min: -28, max: 28, minNormal: 0.25, minSubnormal: 0.0625 },
];

/** Every data type, in ONNX number order. */
export const DTYPES: readonly DType[] = ENTRIES.map((e) => Object.freeze({ ...e, packed: e.packed ?? false }));

const byName = new Map<string, DType>();
/** Each canonical name's spellings, for the closest names to an unknown one. */
const spellings = new Map(DTYPES.map((t) => [t.name, [t.name, t.onnxName, ...t.aliases]]));
const byOnnx = new Map<number, DType>();
for (const t of DTYPES) {
  byOnnx.set(t.onnx, t);
  for (const spelling of [t.name, t.onnxName, ...t.aliases]) {
    const key = spelling.toLowerCase();
    const previous = byName.get(key);
    if (previous && previous !== t) {
      throw new Error(`dtype table: "${spelling}" names both ${previous.name} and ${t.name}`);
    }
    byName.set(key, t);
  }
}

/** Anything `dtype()` accepts: a DType, a name or alias (any case), or an ONNX number. */
export type DTypeLike<N extends DTypeName = DTypeName> = DType<N> | N | (string & {}) | number;

/**
 * Looks a data type up by canonical name, ONNX enum name or number, or an OpenVINO, TensorFlow,
 * NumPy / ml_dtypes or safetensors spelling. Case does not matter for names.
 *
 * @example dtype("FLOAT16").name   // "float16"
 * @example dtype(17).name          // "float8e4m3fn"
 * @example dtype("f8e4m3").name    // "float8e4m3fn" (OpenVINO)
 * @example dtype("float4_e2m1fn")  // float4e2m1 (ml_dtypes)
 * @throws TensorcastError UNKNOWN_DTYPE for anything else (including ONNX 0, UNDEFINED).
 */
export function dtype<N extends DTypeName>(x: DTypeLike<N>): DType<N>;
export function dtype(x: DTypeLike): DType {
  if (typeof x === "object" && x !== null && byOnnx.get((x as DType).onnx) === x) return x;
  const found = typeof x === "number" ? byOnnx.get(x) : typeof x === "string" ? byName.get(x.toLowerCase()) : undefined;
  if (!found) {
    const closest = typeof x === "string" ? closestNames(x, spellings) : [];
    throw new TensorcastError(
      "UNKNOWN_DTYPE",
      `unknown data type ${describe(x)}${closest.length > 0 ? ` (closest: ${closest.join(", ")})` : ""}; ` +
        `expected a name such as ${DTYPES.map((t) => t.name).join(", ")}, ` +
        `an ONNX enum name such as "FLOAT16", or an ONNX number 1..${DTYPES.length}`,
    );
  }
  return found;
}

function describe(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "number") return String(x);
  if (typeof x === "object" && x !== null && "name" in x) return `object named ${JSON.stringify((x as { name: unknown }).name)}`;
  return typeof x;
}

/** Whether `t` is one of the float types stored as codes (everything float except float32/float64). */
export function isCodedFloat(t: DType): boolean {
  return t.kind === "float" && t.array !== "Float32Array" && t.array !== "Float64Array";
}
