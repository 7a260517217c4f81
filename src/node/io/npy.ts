/**
 * NumPy's .npy format (numpy/lib/format.py, format versions 1.0, 2.0 and 3.0):
 *
 *   6 bytes   the magic "\x93NUMPY"
 *   2 bytes   the format version: major, minor (1.0, 2.0 or 3.0)
 *   2 or 4    the header length H, little-endian (u16 in 1.0, u32 in 2.0 and 3.0)
 *   H bytes   a Python dict literal, latin-1 (UTF-8 in 3.0), padded with spaces and ended by "\n":
 *             {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *   the rest  the elements, C order unless fortran_order is True
 *
 * Types NumPy cannot label itself are written with their ml_dtypes name as the descr
 * ('bfloat16', 'float8_e4m3fn', 'int4', ...): `np.load` reads them once `import ml_dtypes` has
 * registered those names (ml_dtypes adds them to numpy.sctypeDict, so `np.dtype('bfloat16')`
 * works). Like ml_dtypes' arrays, sub-byte types (int4, uint4, int2, uint2, float4_e2m1fn and the
 * float6 types) take one byte per element, the code in the low bits and zeros above.
 * `np.save` itself writes ml_dtypes arrays as raw '|V2' / '|V1' (their NumPy kind is 'V');
 * such a file is read only when told which type it holds (`NpyOptions.assume`).
 *
 * Big-endian descriptors ('>f4') are read and converted to little-endian. Fortran-order arrays
 * are refused unless `fortran: "transpose"` asks to read them as their transpose (the same bytes
 * in C order, with the shape reversed); arrays with at most one dimension above 1 are the same in
 * both orders and are read as they are.
 *
 * This file is pure (no Node built-ins): it parses and builds headers and transforms element bytes.
 */
import { dtype, TensorcastError, type DType, type DTypeLike } from "../../index.js";
import { packCodes } from "../../dtype/packing.js";
import { fileError } from "./file.js";
import { describe, expectBytes, expectInteger, expectObject } from "../../args.js";
import { shapeSize } from "../../tensor.js";
import { isDType } from "../args.js";
import { checkedSize, rawByteLength, type TensorInfo } from "./tensors.js";

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // "\x93NUMPY"
/** Headers longer than this are refused (NumPy's own default limit is 10000 bytes). */
export const MAX_NPY_HEADER = 1 << 20;

export interface NpyOptions {
  /** How to read a Fortran-order array: refuse it (the default) or read its transpose. */
  fortran?: "refuse" | "transpose";
  /** The type of a raw '|V1' / '|V2' array (what np.save writes for ml_dtypes types). */
  assume?: DTypeLike;
}

/** How a type is spelled in a descr: NumPy's own code where it has one, else the ml_dtypes name. */
const DESCR_OF: Readonly<Record<string, string>> = {
  bool: "|b1", int8: "|i1", uint8: "|u1", int16: "<i2", uint16: "<u2", int32: "<i4", uint32: "<u4",
  int64: "<i8", uint64: "<u8", float16: "<f2", float32: "<f4", float64: "<f8", complex64: "<c8", complex128: "<c16",
  bfloat16: "bfloat16", float8e4m3fn: "float8_e4m3fn", float8e4m3fnuz: "float8_e4m3fnuz", float8e5m2: "float8_e5m2",
  float8e5m2fnuz: "float8_e5m2fnuz", float8e8m0: "float8_e8m0fnu", float4e2m1: "float4_e2m1fn",
  float6e2m3: "float6_e2m3fn", float6e3m2: "float6_e3m2fn", int4: "int4", uint4: "uint4", int2: "int2", uint2: "uint2",
};

/** NumPy kind + size -> type name. */
const NUMPY_CODES: Readonly<Record<string, string>> = {
  b1: "bool", i1: "int8", u1: "uint8", i2: "int16", u2: "uint16", i4: "int32", u4: "uint32", i8: "int64", u8: "uint64",
  f2: "float16", f4: "float32", f8: "float64", c8: "complex64", c16: "complex128",
  // ml_dtypes registers float8_e5m2 with kind 'f' (the one IEEE-like 8-bit float), so np.save writes it as f1.
  f1: "float8e5m2",
};

const ML_DTYPES = new Map<string, string>(
  Object.entries(DESCR_OF).filter(([, d]) => !d.startsWith("<") && !d.startsWith("|")).map(([name, d]) => [d, name]),
);

/** The descr a type is written with. */
export function npyDescr(t: DType): string | undefined {
  return Object.hasOwn(DESCR_OF, t.name) ? DESCR_OF[t.name] : undefined;
}

/** Bytes per element in a .npy file: 1 for the sub-byte types, as ml_dtypes stores them. */
export function npyItemSize(t: DType): number {
  return t.packed ? 1 : t.bits / 8;
}

export interface NpyHeader extends TensorInfo {
  readonly version: number;
  /** Where the elements start: 10 + H (1.0) or 12 + H (2.0, 3.0). */
  readonly dataStart: number;
  readonly descr: string;
  /** The elements are stored big-endian and need swapping. */
  readonly bigEndian: boolean;
  /** The file was Fortran order and is read as its transpose (shape reversed). */
  readonly transposed: boolean;
  readonly itemSize: number;
}

function bad(file: string, message: string, code: "INVALID_DATA" | "UNKNOWN_DTYPE" | "INVALID_SHAPE" | "SHAPE_MISMATCH" | "UNSUPPORTED_TYPE" = "INVALID_DATA"): TensorcastError {
  return new TensorcastError(code, `${file}: ${message}`);
}

/** Whether `first` starts with the .npy magic. */
export function isNpy(first: Uint8Array): boolean {
  return first.length >= 6 && MAGIC.every((b, i) => first[i] === b);
}

/**
 * How many bytes the fixed prefix and header take, read from the first 12 bytes; checked against
 * the limit and the file's size before anything is allocated.
 */
export function npyPrefix(first: Uint8Array, fileSize: number, file: string): { version: number; headerStart: number; headerLength: number } {
  if (fileSize < 10 || first.length < 10 || !isNpy(first)) throw bad(file, "is not a .npy file: it does not start with \\x93NUMPY");
  const major = first[6];
  const minor = first[7];
  if ((major !== 1 && major !== 2 && major !== 3) || minor !== 0) {
    throw bad(file, `has .npy format version ${major}.${minor}; versions 1.0, 2.0 and 3.0 exist`);
  }
  const view = new DataView(first.buffer, first.byteOffset, first.length);
  if (major > 1 && first.length < 12) throw bad(file, "is truncated inside the .npy header length");
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const headerStart = major === 1 ? 10 : 12;
  if (headerLength > MAX_NPY_HEADER) throw bad(file, `.npy header length ${headerLength} is over the ${MAX_NPY_HEADER}-byte limit`);
  if (headerStart + headerLength > fileSize) {
    throw bad(file, `is truncated: the .npy header is ${headerLength} bytes long but the file has ${fileSize} bytes`);
  }
  return { version: major, headerStart, headerLength };
}

/**
 * Parses the header dict and checks the data's length against the file's size.
 * @throws TensorcastError INVALID_DATA, UNKNOWN_DTYPE, INVALID_SHAPE or SHAPE_MISMATCH naming the file.
 */
export function parseNpyHeader(
  header: Uint8Array, prefix: { version: number; headerStart: number }, fileSize: number, file: string, name: string,
  opts: NpyOptions = {},
): NpyHeader {
  expectBytes(header, "parseNpyHeader's header");
  expectObject(prefix, "parseNpyHeader's prefix");
  expectInteger(prefix.version, "parseNpyHeader's prefix.version", 1, 3, "INVALID_DATA");
  expectInteger(prefix.headerStart, "parseNpyHeader's prefix.headerStart", 0, Number.MAX_SAFE_INTEGER, "INVALID_DATA");
  expectInteger(fileSize, "parseNpyHeader's fileSize", 0, Number.MAX_SAFE_INTEGER, "INVALID_DATA");
  if (typeof file !== "string" || typeof name !== "string") {
    throw new TensorcastError("INVALID_ATTRIBUTE", `parseNpyHeader's file and name must be strings (the names errors give), got ${describe(file)} and ${describe(name)}`);
  }
  if (opts !== undefined) expectObject(opts, "parseNpyHeader's options", "INVALID_ATTRIBUTE");
  let text: string;
  if (prefix.version === 3) {
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(header);
    } catch {
      throw bad(file, "the .npy 3.0 header is not valid UTF-8");
    }
  } else {
    text = "";
    for (let at = 0; at < header.length; at += 4096) text += String.fromCharCode(...header.subarray(at, at + 4096));
  }
  const dict = parseLiteral(text, file);
  if (!(dict instanceof Map)) throw bad(file, "the .npy header is not a dict");
  const keys = [...dict.keys()].sort().join(", ");
  if (keys !== "descr, fortran_order, shape") {
    throw bad(file, `the .npy header has keys ${keys || "(none)"}; it must have exactly descr, fortran_order and shape`);
  }
  const descr = dict.get("descr");
  const fortran = dict.get("fortran_order");
  const shapeValue = dict.get("shape");
  if (typeof descr !== "string") {
    throw bad(file, `descr ${describeLiteral(descr)} is a structured or record dtype; tensorcast reads plain arrays only`, "UNSUPPORTED_TYPE");
  }
  if (typeof fortran !== "boolean") throw bad(file, `fortran_order is ${describeLiteral(fortran)}, not True or False`);
  if (!Array.isArray(shapeValue) || !(shapeValue as { tuple?: boolean }).tuple) {
    throw bad(file, `shape ${describeLiteral(shapeValue)} is not a tuple`, "INVALID_SHAPE");
  }
  const dims = shapeValue as unknown[];
  for (const d of dims) {
    if (typeof d !== "number" || !Number.isSafeInteger(d) || d < 0) {
      throw bad(file, `shape ${describeLiteral(shapeValue)} has ${describeLiteral(d)}; dimensions are integers from 0 to 2^53 - 1`, "INVALID_SHAPE");
    }
  }
  let shape = dims as number[];
  if (shape.length > NPY_MAX_DIMS) {
    throw bad(file, `shape has ${shape.length} dimensions; NumPy reads at most ${NPY_MAX_DIMS}`, "INVALID_SHAPE");
  }
  const size = checkedSize(shape);
  if (size === undefined) throw bad(file, `shape ${describeLiteral(shapeValue)} has more than 2^53 - 1 elements`, "INVALID_SHAPE");

  const { type, bigEndian } = descrType(descr, file, opts);
  let transposed = false;
  if (fortran && shape.filter((d) => d > 1).length > 1) {
    if (opts.fortran !== "transpose") {
      throw bad(
        file,
        `is a Fortran-order (column-major) array of shape ${describeLiteral(shapeValue)}; tensorcast reads C order. ` +
          "Read it as its transpose (the same bytes, shape reversed) with --fortran transpose, " +
          "or re-save it with np.save(path, np.ascontiguousarray(a))",
        "UNSUPPORTED_TYPE",
      );
    }
    shape = shape.slice().reverse();
    transposed = true;
  }
  const itemSize = npyItemSize(type);
  const dataStart = prefix.headerStart + header.length;
  const dataLength = size * itemSize;
  if (!Number.isSafeInteger(dataLength) || dataStart + dataLength > fileSize) {
    throw bad(
      file,
      `is truncated: shape ${describeLiteral(shapeValue)} of ${descr} needs ${dataLength} bytes of data, ` +
        `but ${fileSize - dataStart} follow the header`,
      "SHAPE_MISMATCH",
    );
  }
  if (dataStart + dataLength < fileSize) {
    throw bad(
      file,
      `has ${fileSize - dataStart - dataLength} bytes after the ${dataLength} bytes that shape ${describeLiteral(shapeValue)} of ${descr} needs`,
      "SHAPE_MISMATCH",
    );
  }
  return {
    name, dtype: type, shape, size, byteLength: rawByteLength(type, size), version: prefix.version, dataStart, descr,
    bigEndian, transposed, itemSize,
  };
}

function descrType(descr: string, file: string, opts: NpyOptions): { type: DType; bigEndian: boolean } {
  const ml = ML_DTYPES.get(descr);
  if (ml) return { type: dtype(ml), bigEndian: false };
  const m = /^([<>|=]?)([a-zA-Z])(\d+)$/.exec(descr);
  if (m) {
    const [, order, kind, width] = m;
    if (kind === "V" && (width === "1" || width === "2")) {
      if (opts.assume === undefined) {
        throw bad(
          file,
          `descr '${descr}' is raw ${width}-byte data, which is how np.save writes ml_dtypes arrays (bfloat16, float8, ...); ` +
            "say which type it holds with --npy-dtype (e.g. --npy-dtype bfloat16)",
          "UNKNOWN_DTYPE",
        );
      }
      const t = dtype(opts.assume);
      if (t.kind === "string" || npyItemSize(t) !== Number(width)) {
        throw bad(file, `--npy-dtype ${t.name} takes ${t.kind === "string" ? "no fixed" : npyItemSize(t)} bytes per element, but descr '${descr}' has ${width}`, "UNSUPPORTED_TYPE");
      }
      return { type: t, bigEndian: false };
    }
    const code = `${kind}${width}`;
    if (Object.hasOwn(NUMPY_CODES, code)) {
      const t = dtype(NUMPY_CODES[code]);
      return { type: t, bigEndian: order === ">" && t.bits > 8 };
    }
  }
  throw bad(
    file,
    `descr '${descr}' is not a type tensorcast reads; it reads ${Object.keys(NUMPY_CODES).map((c) => `<${c}`).join(", ")} (either byte order) ` +
      `and the ml_dtypes names ${[...ML_DTYPES.keys()].join(", ")}`,
    "UNKNOWN_DTYPE",
  );
}

/**
 * Turns `count` elements as a .npy file stores them into the raw layout, in place where it can:
 * big-endian elements are swapped, sub-byte codes (one per byte) are packed.
 */
export function npyToRaw(h: Pick<NpyHeader, "dtype" | "bigEndian">, stored: Uint8Array, count: number): Uint8Array {
  const t = h.dtype;
  if (t.packed) {
    const out = new Uint8Array(rawByteLength(t, count));
    packCodes(stored, t.bits, 0, count, out);
    return out;
  }
  if (h.bigEndian) {
    const width = t.kind === "complex" ? t.bits / 16 : t.bits / 8;
    swapBytes(stored, width);
  }
  return stored;
}

/** The .npy storage of `count` raw-layout elements of `t`: sub-byte types unpacked to one per byte. */
export function rawToNpy(t: DType, raw: Uint8Array, count: number): Uint8Array {
  if (!t.packed) return raw;
  const out = new Uint8Array(count);
  const mask = (1 << t.bits) - 1;
  for (let i = 0, bit = 0; i < count; i++, bit += t.bits) {
    const at = bit >>> 3;
    const shift = bit & 7;
    const word = shift + t.bits <= 8 ? raw[at] : raw[at] | (raw[at + 1] << 8);
    out[i] = (word >>> shift) & mask;
  }
  return out;
}

function swapBytes(bytes: Uint8Array, width: number): void {
  for (let i = 0; i + width <= bytes.length; i += width) {
    for (let a = i, b = i + width - 1; a < b; a++, b--) {
      const x = bytes[a];
      bytes[a] = bytes[b];
      bytes[b] = x;
    }
  }
}

/** NumPy 1.x's NPY_MAXDIMS (numpy.load refuses more: "maximum supported dimension for an ndarray is 32"). */
const NPY_MAX_DIMS = 32;

/**
 * The prefix and header of a .npy file holding `shape` elements of `t` in C order: version 1.0
 * when the header fits its 16-bit length, else 2.0; padded with spaces so the data starts at a
 * multiple of 64 bytes, as NumPy pads it.
 * @throws TensorcastError UNSUPPORTED_TYPE for a type .npy cannot hold (string).
 */
export function encodeNpyHeader(t: DType, shape: readonly number[], file = "output", tensor?: string): Uint8Array {
  if (typeof file !== "string" || (tensor !== undefined && typeof tensor !== "string")) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `encodeNpyHeader's file and tensor must be strings (the names errors give), got ${describe(file)} and ${describe(tensor)}`);
  }
  if (!isDType(t)) {
    throw new TensorcastError("INVALID_DATA", `encodeNpyHeader's type must be a DType (dtype("float32")), got ${describe(t)}`);
  }
  shapeSize(shape);
  const descr = npyDescr(t);
  if (descr === undefined) throw fileError("UNSUPPORTED_TYPE", file, `.npy cannot hold ${t.name} tensors`, tensor);
  if (shape.length > NPY_MAX_DIMS) {
    throw fileError("INVALID_SHAPE", file, `has ${shape.length} dimensions; .npy (NumPy) holds at most ${NPY_MAX_DIMS}`, tensor);
  }
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  const dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${dims}, }`;
  for (const [version, prefix] of [[1, 10], [2, 12]] as const) {
    const total = Math.ceil((prefix + dict.length + 1) / 64) * 64;
    const headerLength = total - prefix;
    if (version === 1 && headerLength > 0xffff) continue;
    const out = new Uint8Array(total).fill(0x20);
    out.set(MAGIC, 0);
    out[6] = version;
    out[7] = 0;
    const view = new DataView(out.buffer);
    if (version === 1) view.setUint16(8, headerLength, true);
    else view.setUint32(8, headerLength, true);
    for (let i = 0; i < dict.length; i++) out[prefix + i] = dict.charCodeAt(i);
    out[total - 1] = 0x0a;
    return out;
  }
  throw new TensorcastError("INVALID_DATA", `${file}: the .npy header would be too long`);
}

// ---- the Python literals of a header ----------------------------------------------------------

type Literal = string | number | bigint | boolean | null | Literal[] | Map<string, Literal>;

function describeLiteral(v: unknown): string {
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `'${k}': ${describeLiteral(x)}`).join(", ")}}`;
  if (Array.isArray(v)) {
    const inner = v.map(describeLiteral).join(", ");
    return (v as { tuple?: boolean }).tuple ? `(${inner}${v.length === 1 ? "," : ""})` : `[${inner}]`;
  }
  if (typeof v === "string") return `'${v}'`;
  if (v === true) return "True";
  if (v === false) return "False";
  if (v === null || v === undefined) return "None";
  return String(v);
}

/**
 * Parses the Python literal subset a header uses: dicts, tuples, lists, strings, integers (with
 * Python 2's L suffix, as NumPy's own reader accepts), True, False and None.
 */
function parseLiteral(text: string, file: string): Literal {
  let i = 0;
  let depth = 0;
  const fail = (why: string): never => {
    throw bad(file, `the .npy header is not a Python literal: ${why} at character ${i} of ${JSON.stringify(text.slice(0, 200))}`);
  };
  const space = (): void => {
    while (i < text.length && " \t\r\n".includes(text[i])) i++;
  };
  const value = (): Literal => {
    space();
    const c = text[i];
    if (c === "{" || c === "(" || c === "[") {
      if (++depth > 32) fail("nesting too deep");
      const close = c === "{" ? "}" : c === "(" ? ")" : "]";
      i++;
      const items: Literal[] = [];
      const map = new Map<string, Literal>();
      let commas = 0;
      for (;;) {
        space();
        if (text[i] === close) {
          i++;
          break;
        }
        if (c === "{") {
          const key = value();
          if (typeof key !== "string") fail("a dict key that is not a string");
          space();
          if (text[i] !== ":") fail('a missing ":"');
          i++;
          map.set(key as string, value());
        } else items.push(value());
        space();
        if (text[i] === ",") {
          i++;
          commas++;
        } else if (text[i] !== close) fail(`an unexpected ${text[i] === undefined ? "end" : JSON.stringify(text[i])}`);
      }
      depth--;
      if (c === "{") return map;
      if (c === "(") {
        // (x) is x in Python, not a tuple; (x,) is a tuple.
        if (items.length === 1 && commas === 0) return items[0];
        return Object.assign(items, { tuple: true });
      }
      return items;
    }
    if (c === "'" || c === '"') {
      i++;
      let s = "";
      while (i < text.length && text[i] !== c) {
        if (text[i] === "\\") {
          i++;
          if (i >= text.length) break;
        }
        s += text[i++];
      }
      if (text[i] !== c) fail("an unterminated string");
      i++;
      return s;
    }
    const m = /^(?:True|False|None|-?\d+[lL]?)/.exec(text.slice(i, i + 32));
    if (!m) fail(`an unexpected ${c === undefined ? "end" : JSON.stringify(c)}`);
    const word = m![0];
    i += word.length;
    if (word === "True") return true;
    if (word === "False") return false;
    if (word === "None") return null;
    // Past 2^53 a bigint, so that a message quotes the integer the file holds, not Infinity or a neighbour.
    const n = Number(word.replace(/[lL]$/, ""));
    return Number.isSafeInteger(n) ? n : BigInt(word.replace(/[lL]$/, ""));
  };
  const v = value();
  space();
  if (i !== text.length) fail("text after the dict");
  return v;
}
