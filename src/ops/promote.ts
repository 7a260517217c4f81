/**
 * ConvertPromoteTypes-14 (OpenVINO): the common type of two inputs, chosen the way OpenVINO's 2025
 * code chooses it (not the way its spec describes it; docs/semantics.md lists the differences),
 * and both inputs cast to that type.
 */
import { describe as describeValue } from "../args.js";
import { TensorcastError, type ErrorCode } from "../errors.js";
import { dtype, type DType, type DTypeLike, type DTypeName } from "../dtype/table.js";
import { expectStorage, Tensor } from "../tensor.js";
import { cast } from "./cast.js";

/** Every OpenVINO element type name (`ov::element::Type::get_known_types()`, 2025). */
export type OvTypeName =
  | "dynamic" | "boolean" | "bf16" | "f16" | "f32" | "f64" | "i4" | "i8" | "i16" | "i32" | "i64"
  | "u1" | "u2" | "u3" | "u4" | "u6" | "u8" | "u16" | "u32" | "u64"
  | "nf4" | "f8e4m3" | "f8e5m2" | "string" | "f4e2m1" | "f8e8m0";

/**
 * The 18 types ConvertPromoteTypes accepts (`is_type_supported()`; `dynamic` is accepted too), in
 * the order of the tables in docs/semantics.md.
 */
export const PROMOTE_TYPES = [
  "boolean", "u1", "u4", "u8", "u16", "u32", "u64", "i4", "i8", "i16", "i32", "i64",
  "f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64",
] as const satisfies readonly OvTypeName[];
export type PromoteTypeName = (typeof PROMOTE_TYPES)[number];

/** A type argument: an OpenVINO name ("u1", "dynamic" included) or anything `dtype()` accepts. */
export type PromoteTypeLike = OvTypeName | DTypeLike;

/**
 * OpenVINO's four validation sentences, verbatim (the 2025 wording: "promoted", where 2024 said
 * "aligned"). Error messages contain them, so callers that matched OpenVINO's text keep working.
 */
export const PROMOTION_ERRORS = {
  intToFloat: "Integer input cannot be safely promoted to floating-point.",
  pytorchScalar: "Scalar input cannot be PyTorch-like promoted using safe promotion rules.",
  unsignedToSigned: "Unsigned integer input cannot be safely promoted into any supported signed integer.",
  unsupportedPair: "Unsupported input element types for ConvertPromoteTypes with given attributes.",
} as const;

/**
 * The code of a refused promotion. A dedicated code is requested; until it exists this is the
 * closest stable one ("a known data type that this operator does not accept"), kept in one place.
 */
export const PROMOTION_ERROR_CODE: ErrorCode = "PROMOTION_ERROR";

export interface PromoteOptions {
  /** OpenVINO `promote_unsafe`: allow lossy promotions instead of throwing. Default false. */
  promoteUnsafe?: boolean;
  /**
   * OpenVINO `pytorch_scalar_promotion`: when both types are integers or both floats and exactly
   * one input has rank 0, the other input's type wins. Default false.
   */
  pytorchScalarPromotion?: boolean;
  /**
   * OpenVINO `u64_integer_promotion_target`: the result for u64 with a signed integer when
   * `promoteUnsafe` is on. Any OpenVINO element type name (or a tensorcast name that has one);
   * like OpenVINO it is returned as is, even "dynamic" or a type the op itself refuses as input.
   * Default "f32".
   */
  u64IntegerPromotionTarget?: PromoteTypeLike;
  /** Rank of the first input: 0 is a scalar; undefined is an unknown (dynamic) rank. */
  aRank?: number;
  /** Rank of the second input, as `aRank`. */
  bRank?: number;
}

/** Options of `convertPromoteTypes`: the ranks come from the tensors. */
export type ConvertPromoteOptions = Omit<PromoteOptions, "aRank" | "bRank">;

/**
 * A promotion result: OpenVINO's spelling, and tensorcast's DType where one exists. `dtype` is
 * undefined for "dynamic" (the type depends on an unknown rank or input type) and for "u1", and
 * for the target-only names "u3", "u6" and "nf4". Results are shared frozen objects, one per name.
 */
export interface PromotedType {
  readonly name: OvTypeName;
  readonly dtype: DType | undefined;
}

/** OpenVINO name -> tensorcast name; undefined where tensorcast has no storage for the type. */
const TENSORCAST: Readonly<Record<OvTypeName, DTypeName | undefined>> = {
  dynamic: undefined, boolean: "bool", bf16: "bfloat16", f16: "float16", f32: "float32", f64: "float64",
  i4: "int4", i8: "int8", i16: "int16", i32: "int32", i64: "int64",
  u1: undefined, u2: "uint2", u3: undefined, u4: "uint4", u6: undefined,
  u8: "uint8", u16: "uint16", u32: "uint32", u64: "uint64",
  nf4: undefined, f8e4m3: "float8e4m3fn", f8e5m2: "float8e5m2", string: "string",
  f4e2m1: "float4e2m1", f8e8m0: "float8e8m0",
};
const OV_NAMES = new Set(Object.keys(TENSORCAST) as OvTypeName[]);
const OV_OF = new Map<DTypeName, OvTypeName>();
for (const [ov, tc] of Object.entries(TENSORCAST) as [OvTypeName, DTypeName | undefined][]) if (tc) OV_OF.set(tc, ov);

/** The only properties OpenVINO's code reads: `bitwidth()`, `is_real()`, `is_signed()` (element_type.cpp). */
interface Traits { readonly bits: number; readonly real: boolean; readonly signed: boolean }
const int = (bits: number, signed: boolean): Traits => ({ bits, real: false, signed });
const real = (bits: number): Traits => ({ bits, real: true, signed: true });
const TRAITS: Readonly<Record<PromoteTypeName, Traits>> = {
  // boolean counts as a signed 8-bit integer, but step 4 handles it before the traits are read.
  boolean: int(8, true),
  u1: int(1, false), u4: int(4, false), u8: int(8, false), u16: int(16, false), u32: int(32, false), u64: int(64, false),
  i4: int(4, true), i8: int(8, true), i16: int(16, true), i32: int(32, true), i64: int(64, true),
  f8e4m3: real(8), f8e5m2: real(8), f16: real(16), bf16: real(16), f32: real(32), f64: real(64),
};
const SUPPORTED = new Set<string>(PROMOTE_TYPES);

const RESULTS = new Map<OvTypeName, PromotedType>(
  [...OV_NAMES].map((name) => {
    const tc = TENSORCAST[name];
    return [name, Object.freeze({ name, dtype: tc ? dtype(tc) : undefined })];
  }),
);

const OPTION_KEYS = new Set(["promoteUnsafe", "pytorchScalarPromotion", "u64IntegerPromotionTarget", "aRank", "bRank"]);
const SUPPORTED_LIST = `${PROMOTE_TYPES.join(", ")} (and dynamic)`;

/**
 * OpenVINO ConvertPromoteTypes-14's common type for inputs of types `a` and `b`, step by step as
 * the 2025 code does it (docs/semantics.md, "ConvertPromoteTypes"):
 * - either type `dynamic` -> dynamic; equal types -> that type; boolean -> the other type;
 * - integer with float -> the float, if unsafe or float bits >= 2 * integer bits; else an error;
 * - same kind with `pytorchScalarPromotion`: an unknown rank -> dynamic; exactly one rank 0 -> the
 *   other input's type (safe mode checks bit widths loosely, see the doc);
 * - signed with unsigned integer -> the signed type of max(2 * unsigned bits, signed bits) when
 *   unsigned bits <= 32 and (unsafe or that fits), else `u64IntegerPromotionTarget` if unsafe;
 * - same signedness -> the wider type; {f8e4m3, f8e5m2} -> f16 and {f16, bf16} -> f32 if unsafe.
 * The result never depends on the input order or on values.
 *
 * @example promoteTypes("i32", "u8").name                             // "i32"
 * @example promoteTypes("f16", "bf16", { promoteUnsafe: true }).dtype  // float32's DType
 * @example promoteTypes("i64", "u8", { pytorchScalarPromotion: true, promoteUnsafe: true, aRank: 0, bRank: 1 }).name // "u8"
 * @example promoteTypes("u1", "i4").name                               // "i4" (no DType: u1 has no storage)
 * @throws TensorcastError PROMOTION_ERROR_CODE with one of OpenVINO's sentences (`PROMOTION_ERRORS`)
 *         for a pair it refuses; UNSUPPORTED_TYPE for a known type outside the 18 (nf4, string,
 *         float8e4m3fnuz, int2 ...) and UNKNOWN_DTYPE for an unknown name, both listing the 18;
 *         INVALID_ATTRIBUTE for a malformed option or a target that is no OpenVINO type.
 */
export function promoteTypes(a: PromoteTypeLike, b: PromoteTypeLike, opts: PromoteOptions = {}): PromotedType {
  const o = checkOptions(opts);
  return RESULTS.get(common(openvinoTypeName(a), openvinoTypeName(b), o))!;
}

/**
 * OpenVINO ConvertPromoteTypes-14 on data: both tensors cast (with `cast`'s defaults: float8
 * targets saturate) to `promoteTypes(a.dtype, b.dtype, ...)`, the ranks taken from the shapes.
 * Shapes are unchanged and need not match; values never affect the type. Always returns new tensors.
 *
 * @example convertPromoteTypes(Tensor.fromValues([1, 2], "int8"), Tensor.fromValues([0.5], "float32"))
 *          // [float32 [1, 2], float32 [0.5]]
 * @throws as `promoteTypes`; also UNSUPPORTED_TYPE when the common type has no tensor storage (only
 *         possible through `u64IntegerPromotionTarget`: u1, u3, u6, nf4, dynamic).
 */
export function convertPromoteTypes(a: Tensor, b: Tensor, opts: ConvertPromoteOptions = {}): [Tensor, Tensor] {
  for (const [x, role] of [[a, "first"], [b, "second"]] as const) {
    if (!(x instanceof Tensor)) {
      throw new TensorcastError("INVALID_DATA", `convertPromoteTypes expects a Tensor as ${role} input, got ${typeof x}`);
    }
    expectStorage(x, `convertPromoteTypes' ${role} input`);
  }
  if (typeof opts !== "object" || opts === null) checkOptions(opts);
  if ("aRank" in opts || "bRank" in opts) {
    throw new TensorcastError("INVALID_ATTRIBUTE", "convertPromoteTypes takes the ranks from the tensors' shapes; remove aRank / bRank");
  }
  const t = promoteTypes(a.dtype, b.dtype, { ...opts, aRank: a.shape.length, bRank: b.shape.length });
  if (!t.dtype) {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `the common type of ${a.dtype.name} and ${b.dtype.name} is ${t.name} (from u64IntegerPromotionTarget), ` +
        `which has no tensor storage in tensorcast; choose a target such as f32, f64 or i64`,
    );
  }
  return [cast(a, t.dtype), cast(b, t.dtype)];
}

/**
 * OpenVINO's spelling of a type ConvertPromoteTypes accepts as input: "f8e4m3" for
 * float8e4m3fn, "boolean" for bool, "dynamic" (and its deprecated alias "undefined") as is.
 * @throws TensorcastError UNSUPPORTED_TYPE / UNKNOWN_DTYPE as `promoteTypes`.
 */
export function openvinoTypeName(t: PromoteTypeLike): PromoteTypeName | "dynamic" {
  const name = anyOpenvinoName(t);
  if (name === undefined) {
    throw new TensorcastError("UNKNOWN_DTYPE", `unknown data type ${describe(t)}; ConvertPromoteTypes accepts ${SUPPORTED_LIST}`);
  }
  if (name !== "dynamic" && !SUPPORTED.has(name)) {
    const spelled = typeof t === "string" && t.toLowerCase() === name ? name : `${describe(t)} (${name === "-" ? "no OpenVINO type" : `OpenVINO ${name}`})`;
    throw new TensorcastError("UNSUPPORTED_TYPE", `ConvertPromoteTypes does not accept ${spelled}; it accepts ${SUPPORTED_LIST}`);
  }
  return name as PromoteTypeName | "dynamic";
}

/** The OpenVINO name of `t`, "-" for a tensorcast type OpenVINO lacks, undefined if unknown. */
function anyOpenvinoName(t: PromoteTypeLike): OvTypeName | "-" | undefined {
  if (typeof t === "string") {
    const key = t.toLowerCase();
    // 2025 headers keep `undefined` as a deprecated alias of `dynamic`.
    if (key === "undefined") return "dynamic";
    if (OV_NAMES.has(key as OvTypeName)) return key as OvTypeName;
  }
  let found: DType;
  try {
    found = dtype(t as DTypeLike);
  } catch (e) {
    if (e instanceof TensorcastError && e.code === "UNKNOWN_DTYPE") return undefined;
    throw e;
  }
  return OV_OF.get(found.name) ?? "-";
}

interface Resolved {
  readonly unsafe: boolean;
  readonly pytorch: boolean;
  readonly target: OvTypeName;
  readonly aRank: number | undefined;
  readonly bRank: number | undefined;
}

function common(a: PromoteTypeName | "dynamic", b: PromoteTypeName | "dynamic", o: Resolved): OvTypeName {
  if (a === "dynamic" || b === "dynamic") return "dynamic";
  if (a === b) return a;
  if (a === "boolean") return b;
  if (b === "boolean") return a;
  const ta = TRAITS[a];
  const tb = TRAITS[b];
  const fail = (sentence: string, why: string): never => {
    // Unsafe mode never refuses a pair of supported types, so it always has an answer to offer.
    const unsafe = o.unsafe ? "" : ` With promoteUnsafe: true the result is ${common(a, b, { ...o, unsafe: true })}.`;
    throw new TensorcastError(PROMOTION_ERROR_CODE, `ConvertPromoteTypes(${a}, ${b}): ${sentence} ${why}.${unsafe}`);
  };

  if (ta.real !== tb.real) {
    const [f, i] = ta.real ? [a, b] : [b, a];
    if (o.unsafe || TRAITS[f].bits >= 2 * TRAITS[i].bits) return f;
    return fail(PROMOTION_ERRORS.intToFloat, `${f} has ${TRAITS[f].bits} bits, fewer than twice the ${TRAITS[i].bits} of ${i}`);
  }

  if (o.pytorch) {
    // 2025 behaviour: with an unknown rank the scalar-ness, and so the type, is unknown.
    if (o.aRank === undefined || o.bRank === undefined) return "dynamic";
    if ((o.aRank === 0) !== (o.bRank === 0)) {
      const [target, scalar] = o.aRank === 0 ? [b, a] : [a, b];
      const t = TRAITS[target];
      const s = TRAITS[scalar];
      // OpenVINO's check, ported as is although it is loose: 2 * target bits >= scalar bits lets
      // S(u64) + D(i32) through, and floats only compare widths (S(bf16) + D(f16) -> f16).
      const safe = (t.signed === s.signed && t.bits >= s.bits) || (t.signed && !s.signed && 2 * t.bits >= s.bits);
      if (o.unsafe || safe) return target;
      return fail(PROMOTION_ERRORS.pytorchScalar, `the rank-0 ${scalar} does not fit the ${target} of the other input under the safe rule`);
    }
  }

  if (ta.signed !== tb.signed) {
    const [u, i] = ta.signed ? [b, a] : [a, b];
    const ub = TRAITS[u].bits;
    const ib = TRAITS[i].bits;
    if (ub <= 32 && (o.unsafe || 2 * ub <= ib)) return signedInt(Math.max(2 * ub, ib));
    if (o.unsafe) return o.target;
    return fail(
      PROMOTION_ERRORS.unsignedToSigned,
      ub === 64 ? `${u} with a signed integer would need i128` : `${u} needs a signed integer of ${2 * ub} bits, ${i} has ${ib}`,
    );
  }

  if (ta.bits !== tb.bits) return ta.bits > tb.bits ? a : b;

  // Same kind, signedness and width but different types: only {f8e4m3, f8e5m2} and {f16, bf16}.
  if (o.unsafe) return ta.bits === 8 ? "f16" : "f32";
  return fail(PROMOTION_ERRORS.unsupportedPair, `${a} and ${b} have the same width but different formats`);
}

/** OpenVINO's `bitwidth_to_int` (2025: anything above 32 is i64). */
function signedInt(bits: number): OvTypeName {
  return bits <= 4 ? "i4" : bits <= 8 ? "i8" : bits <= 16 ? "i16" : bits <= 32 ? "i32" : "i64";
}

function checkOptions(opts: PromoteOptions): Resolved {
  if (typeof opts !== "object" || opts === null) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `options must be an object, got ${describe(opts)}`);
  }
  for (const key of Object.keys(opts)) {
    if (!OPTION_KEYS.has(key)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `unknown option "${key}"; ConvertPromoteTypes accepts ${[...OPTION_KEYS].join(", ")}`);
    }
  }
  const flag = (key: "promoteUnsafe" | "pytorchScalarPromotion"): boolean => {
    const v = opts[key];
    if (v !== undefined && typeof v !== "boolean") {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${key} must be true or false, got ${describe(v)}`);
    }
    return v ?? false;
  };
  const rank = (key: "aRank" | "bRank"): number | undefined => {
    const v = opts[key];
    if (v !== undefined && !(typeof v === "number" && Number.isInteger(v) && v >= 0)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${key} must be an integer >= 0 (0 for a scalar) or undefined for an unknown rank, got ${describe(v)}`);
    }
    return v;
  };
  return {
    unsafe: flag("promoteUnsafe"),
    pytorch: flag("pytorchScalarPromotion"),
    target: checkTarget(opts.u64IntegerPromotionTarget ?? "f32"),
    aRank: rank("aRank"),
    bRank: rank("bRank"),
  };
}

/** OpenVINO never validates the target beyond parsing its name ("Incorrect type: ..."). */
function checkTarget(t: PromoteTypeLike): OvTypeName {
  const name = anyOpenvinoName(t);
  if (name === undefined || name === "-") {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `u64IntegerPromotionTarget must name an OpenVINO element type (${[...OV_NAMES].join(", ")}); got ${describe(t)}` +
        (name === "-" ? ", which OpenVINO does not have" : ""),
    );
  }
  return name;
}

function describe(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "object" && x !== null && !Array.isArray(x) && typeof (x as { name?: unknown }).name === "string") return `the DType ${(x as { name: string }).name.slice(0, 40)}`;
  return describeValue(x);
}
