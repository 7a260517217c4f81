/**
 * ConvertPromoteTypes (OpenVINO opset14): all 100 cases of promote_vectors.json (OpenVINO's own
 * tests, the spec's examples, one derived case), the three full tables of the spec digest
 * (promote.md) for every pair in both input orders, the spellings accepted and refused, every
 * error sentence, and the data side (convertPromoteTypes = our Cast to the common type).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { DTYPES, Tensor, TensorcastError, dtype } from "../../src/index.js";
import {
  PROMOTE_TYPES, PROMOTION_ERRORS, PROMOTION_ERROR_CODE, convertPromoteTypes, openvinoTypeName, promoteTypes,
  type PromoteOptions, type PromoteTypeName,
} from "../../src/ops/promote.js";
import { throwsCode } from "../support/assertions.js";

// Compiled tests run from build/test/ops/; the fixtures stay in the source tree.
const VECTORS = new URL("../../../test/fixtures/promote_vectors.json", import.meta.url);

interface Vector {
  lhs: string;
  rhs: string;
  lhs_shape: string;
  rhs_shape: string;
  lhs_scalar: boolean;
  rhs_scalar: boolean;
  lhs_rank_dynamic?: boolean;
  rhs_rank_dynamic?: boolean;
  promote_unsafe: boolean;
  pytorch_scalar_promotion: boolean;
  u64_integer_promotion_target: string;
  expect: string | { error: true; message: string };
  kind: "test" | "spec_example" | "derived";
  test?: string;
  expect_2024_versions?: string;
}

/** The rank of an OpenVINO partial shape: "[]" is 0, "[...]" is unknown, "[?,1..5,2]" is 3. */
function rank(shape: string): number | undefined {
  const inner = shape.replace(/^\[|\]$/g, "");
  if (inner === "...") return undefined;
  return inner === "" ? 0 : inner.split(",").length;
}

/** The outcome of promoteTypes as a string: the type's name, or "!" + the sentence of its error. */
function outcome(a: string, b: string, opts: PromoteOptions): string {
  try {
    return promoteTypes(a, b, opts).name;
  } catch (e) {
    if (!(e instanceof TensorcastError)) throw e;
    const sentence = Object.values(PROMOTION_ERRORS).find((s) => e.message.includes(s));
    assert.ok(sentence, `no OpenVINO sentence in: ${e.message}`);
    assert.equal(e.code, PROMOTION_ERROR_CODE);
    return `!${sentence}`;
  }
}

const vectors = JSON.parse(readFileSync(VECTORS, "utf8")) as Vector[];

test("all 100 vectors of promote_vectors.json, in both input orders", () => {
  assert.equal(vectors.length, 100);
  let passed = 0;
  for (const v of vectors) {
    const aRank = rank(v.lhs_shape);
    const bRank = rank(v.rhs_shape);
    // The JSON's own flags agree with the shapes it gives.
    assert.equal(aRank === 0, v.lhs_scalar);
    assert.equal(bRank === 0, v.rhs_scalar);
    assert.equal(aRank === undefined, v.lhs_rank_dynamic === true);
    assert.equal(bRank === undefined, v.rhs_rank_dynamic === true);
    const opts = {
      promoteUnsafe: v.promote_unsafe,
      pytorchScalarPromotion: v.pytorch_scalar_promotion,
      u64IntegerPromotionTarget: v.u64_integer_promotion_target,
    };
    const expected = typeof v.expect === "string" ? v.expect : `!${v.expect.message}`;
    const label = `${JSON.stringify(v)}`;
    assert.equal(outcome(v.lhs, v.rhs, { ...opts, aRank, bRank }), expected, label);
    assert.equal(outcome(v.rhs, v.lhs, { ...opts, aRank: bRank, bRank: aRank }), expected, `swapped: ${label}`);
    passed++;
  }
  assert.equal(passed, 100);
});

test("the one 2024/2025 difference: pytorch mode with an unknown rank gives dynamic (2024: u8)", () => {
  const changed = vectors.filter((v) => v.expect_2024_versions !== undefined);
  assert.equal(changed.length, 1);
  const opts = { promoteUnsafe: true, pytorchScalarPromotion: true };
  assert.equal(promoteTypes("i32", "u8", { ...opts, aRank: 0 }).name, "dynamic");
  // Once the rank is known the 2024 answer comes back.
  assert.equal(promoteTypes("i32", "u8", { ...opts, aRank: 0, bRank: 1 }).name, changed[0].expect_2024_versions);
  // Without pytorch mode, or for int/float mixes, the rank is never looked at.
  assert.equal(promoteTypes("i32", "u8", { promoteUnsafe: true }).name, "i32");
  assert.equal(promoteTypes("i32", "f16", { ...opts, aRank: 0 }).name, "f16");
});

test("the seed's examples, with the attributes the text implies", () => {
  const examples = vectors.filter((v) => v.kind !== "test");
  assert.equal(examples.length, 20);
  const q = (a: string, b: string, opts: PromoteOptions = {}) => outcome(a, b, opts);
  // Defaults.
  assert.equal(q("i8", "f32"), "f32");
  assert.equal(q("i32", "u8"), "i32");
  // "Will cause exceptions when promote_unsafe is false": they do, and with it they give the stated type.
  const unsafe = { promoteUnsafe: true };
  for (const [a, b, type, sentence] of [
    ["f16", "i64", "f16", PROMOTION_ERRORS.intToFloat],
    ["f64", "u64", "f64", PROMOTION_ERRORS.intToFloat],
    ["i8", "u8", "i16", PROMOTION_ERRORS.unsignedToSigned],
    ["f16", "bf16", "f32", PROMOTION_ERRORS.unsupportedPair],
    ["f8e4m3", "f8e5m2", "f16", PROMOTION_ERRORS.unsupportedPair],
    ["u64", "i8", "f32", PROMOTION_ERRORS.unsignedToSigned],
  ]) {
    assert.equal(q(a, b), `!${sentence}`, `${a} ${b}`);
    assert.equal(q(a, b, unsafe), type, `${a} ${b} unsafe`);
  }
  // PyTorch mode: S(i64) + D(u8) -> u8 only when unsafe; S(f16) + D(i8) -> f16 by the general rule.
  const torch = { pytorchScalarPromotion: true, aRank: 0, bRank: 1 };
  assert.equal(q("i64", "u8", { ...torch, promoteUnsafe: true }), "u8");
  assert.equal(q("i64", "u8", torch), `!${PROMOTION_ERRORS.pytorchScalar}`);
  assert.equal(q("f16", "i8", torch), "f16");
  // The three XML examples.
  assert.equal(q("f16", "f32"), "f32");
  assert.equal(q("i16", "u32", unsafe), "i64");
  assert.equal(q("i16", "u64", unsafe), "f32");
});

// ---- the three tables of promote.md, verbatim (row label first; columns in the same order) ----
const TABLE_A = `
bool bool u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u1   u1   u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u4   u4   u4   u4   u8   u16  u32  u64  !U   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u8   u8   u8   u8   u8   u16  u32  u64  !U   !U   i16  i32  i64  !F   !F   f16  bf16 f32  f64
u16  u16  u16  u16  u16  u16  u32  u64  !U   !U   !U   i32  i64  !F   !F   !F   !F   f32  f64
u32  u32  u32  u32  u32  u32  u32  u64  !U   !U   !U   !U   i64  !F   !F   !F   !F   !F   f64
u64  u64  u64  u64  u64  u64  u64  u64  !U   !U   !U   !U   !U   !F   !F   !F   !F   !F   !F
i4   i4   i4   !U   !U   !U   !U   !U   i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i8   i8   i8   i8   !U   !U   !U   !U   i8   i8   i16  i32  i64  !F   !F   f16  bf16 f32  f64
i16  i16  i16  i16  i16  !U   !U   !U   i16  i16  i16  i32  i64  !F   !F   !F   !F   f32  f64
i32  i32  i32  i32  i32  i32  !U   !U   i32  i32  i32  i32  i64  !F   !F   !F   !F   !F   f64
i64  i64  i64  i64  i64  i64  i64  !U   i64  i64  i64  i64  i64  !F   !F   !F   !F   !F   !F
e4m3 e4m3 e4m3 e4m3 !F   !F   !F   !F   e4m3 !F   !F   !F   !F   e4m3 !X   f16  bf16 f32  f64
e5m2 e5m2 e5m2 e5m2 !F   !F   !F   !F   e5m2 !F   !F   !F   !F   !X   e5m2 f16  bf16 f32  f64
f16  f16  f16  f16  f16  !F   !F   !F   f16  f16  !F   !F   !F   f16  f16  f16  !X   f32  f64
bf16 bf16 bf16 bf16 bf16 !F   !F   !F   bf16 bf16 !F   !F   !F   bf16 bf16 !X   bf16 f32  f64
f32  f32  f32  f32  f32  f32  !F   !F   f32  f32  f32  !F   !F   f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  !F   f64  f64  f64  f64  !F   f64  f64  f64  f64  f64  f64
`;
const TABLE_B = `
bool bool u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u1   u1   u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u4   u4   u4   u4   u8   u16  u32  u64  i8   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u8   u8   u8   u8   u8   u16  u32  u64  i16  i16  i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u16  u16  u16  u16  u16  u16  u32  u64  i32  i32  i32  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u32  u32  u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  i64  e4m3 e5m2 f16  bf16 f32  f64
u64  u64  u64  u64  u64  u64  u64  u64  f32  f32  f32  f32  f32  e4m3 e5m2 f16  bf16 f32  f64
i4   i4   i4   i8   i16  i32  i64  f32  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i8   i8   i8   i8   i16  i32  i64  f32  i8   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i16  i16  i16  i16  i16  i32  i64  f32  i16  i16  i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i32  i32  i32  i32  i32  i32  i64  f32  i32  i32  i32  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i64  i64  i64  i64  i64  i64  i64  f32  i64  i64  i64  i64  i64  e4m3 e5m2 f16  bf16 f32  f64
e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 f16  f16  bf16 f32  f64
e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 f16  e5m2 f16  bf16 f32  f64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
`;
const TABLE_C = `
bool bool u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u1   u1   u1   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u4   u4   !P   u4   u8   u16  u32  u64  i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
u8   u8   !P   !P   u8   u16  u32  u64  i4   i8   i16  i32  i64  !F   !F   f16  bf16 f32  f64
u16  u16  !P   !P   !P   u16  u32  u64  !P   i8   i16  i32  i64  !F   !F   !F   !F   f32  f64
u32  u32  !P   !P   !P   !P   u32  u64  !P   !P   i16  i32  i64  !F   !F   !F   !F   !F   f64
u64  u64  !P   !P   !P   !P   !P   u64  !P   !P   !P   i32  i64  !F   !F   !F   !F   !F   !F
i4   i4   !P   !P   !P   !P   !P   !P   i4   i8   i16  i32  i64  e4m3 e5m2 f16  bf16 f32  f64
i8   i8   !P   !P   !P   !P   !P   !P   !P   i8   i16  i32  i64  !F   !F   f16  bf16 f32  f64
i16  i16  !P   !P   !P   !P   !P   !P   !P   !P   i16  i32  i64  !F   !F   !F   !F   f32  f64
i32  i32  !P   !P   !P   !P   !P   !P   !P   !P   !P   i32  i64  !F   !F   !F   !F   !F   f64
i64  i64  !P   !P   !P   !P   !P   !P   !P   !P   !P   !P   i64  !F   !F   !F   !F   !F   !F
e4m3 e4m3 e4m3 e4m3 !F   !F   !F   !F   e4m3 !F   !F   !F   !F   e4m3 e5m2 f16  bf16 f32  f64
e5m2 e5m2 e5m2 e5m2 !F   !F   !F   !F   e5m2 !F   !F   !F   !F   e4m3 e5m2 f16  bf16 f32  f64
f16  f16  f16  f16  f16  !F   !F   !F   f16  f16  !F   !F   !F   !P   !P   f16  bf16 f32  f64
bf16 bf16 bf16 bf16 bf16 !F   !F   !F   bf16 bf16 !F   !F   !F   !P   !P   f16  bf16 f32  f64
f32  f32  f32  f32  f32  f32  !F   !F   f32  f32  f32  !F   !F   !P   !P   !P   !P   f32  f64
f64  f64  f64  f64  f64  f64  f64  !F   f64  f64  f64  f64  !F   !P   !P   !P   !P   !P   f64
`;

/** promote.md's short spellings, and its error tags. */
const SHORT: Record<string, string> = { bool: "boolean", e4m3: "f8e4m3", e5m2: "f8e5m2" };
const TAGS: Record<string, string> = {
  "!F": `!${PROMOTION_ERRORS.intToFloat}`,
  "!U": `!${PROMOTION_ERRORS.unsignedToSigned}`,
  "!X": `!${PROMOTION_ERRORS.unsupportedPair}`,
  "!P": `!${PROMOTION_ERRORS.pytorchScalar}`,
};

/** A table as [row type, column type, expected outcome] for all 324 cells. */
function cells(table: string): [PromoteTypeName, PromoteTypeName, string][] {
  const rows = table.trim().split("\n").map((line) => line.trim().split(/\s+/));
  assert.equal(rows.length, 18);
  const out: [PromoteTypeName, PromoteTypeName, string][] = [];
  rows.forEach(([label, ...row], r) => {
    assert.equal(SHORT[label] ?? label, PROMOTE_TYPES[r]);
    assert.equal(row.length, 18);
    row.forEach((cell, c) => out.push([PROMOTE_TYPES[r], PROMOTE_TYPES[c], TAGS[cell] ?? SHORT[cell] ?? cell]));
  });
  return out;
}

const REAL = new Set<string>(["f8e4m3", "f8e5m2", "f16", "bf16", "f32", "f64"]);

test("table A (defaults): every pair, both orders, and whenever the PyTorch branch is not taken", () => {
  let checked = 0;
  for (const [r, c, want] of cells(TABLE_A)) {
    for (const opts of [
      {},
      // Pytorch mode with both inputs scalars, or both not, takes the general rules.
      { pytorchScalarPromotion: true, aRank: 0, bRank: 0 },
      { pytorchScalarPromotion: true, aRank: 1, bRank: 3 },
    ]) {
      assert.equal(outcome(r, c, opts), want, `${r} ${c} ${JSON.stringify(opts)}`);
      assert.equal(outcome(c, r, opts), want, `${c} ${r} ${JSON.stringify(opts)}`);
      checked += 2;
    }
  }
  assert.equal(checked, 324 * 6);
});

test("table B (promote_unsafe): every pair, both orders; u64 x signed shows the target", () => {
  for (const [r, c, want] of cells(TABLE_B)) {
    for (const opts of [{ promoteUnsafe: true }, { promoteUnsafe: true, pytorchScalarPromotion: true, aRank: 2, bRank: 2 }]) {
      assert.equal(outcome(r, c, opts), want, `${r} ${c}`);
      assert.equal(outcome(c, r, opts), want, `${c} ${r}`);
    }
    // The target attribute shows exactly in the u64 x signed-integer cells.
    const u64Signed = (r === "u64" && /^i/.test(c)) || (c === "u64" && /^i/.test(r));
    const withI64 = outcome(r, c, { promoteUnsafe: true, u64IntegerPromotionTarget: "i64" });
    assert.equal(withI64, u64Signed ? "i64" : want, `${r} ${c} target i64`);
  }
});

test("table C (pytorch, safe): row rank 0, column rank >= 1, both orders; unsafe gives the column type", () => {
  const tableB = new Map(cells(TABLE_B).map(([r, c, want]) => [`${r} ${c}`, want]));
  for (const [r, c, want] of cells(TABLE_C)) {
    const opts = { pytorchScalarPromotion: true };
    assert.equal(outcome(r, c, { ...opts, aRank: 0, bRank: 1 }), want, `S(${r}) D(${c})`);
    assert.equal(outcome(c, r, { ...opts, aRank: 4, bRank: 0 }), want, `D(${c}) S(${r})`);
    // Unsafe: same-kind pairs of different types take the column (non-scalar) type; the others are table B.
    const sameKind = r !== c && r !== "boolean" && c !== "boolean" && REAL.has(r) === REAL.has(c);
    const unsafe = { ...opts, promoteUnsafe: true };
    assert.equal(outcome(r, c, { ...unsafe, aRank: 0, bRank: 1 }), sameKind ? c : tableB.get(`${r} ${c}`), `unsafe S(${r}) D(${c})`);
    assert.equal(outcome(c, r, { ...unsafe, aRank: 1, bRank: 0 }), sameKind ? c : tableB.get(`${r} ${c}`), `unsafe D(${c}) S(${r})`);
  }
});

test("pytorch mode with an unknown rank: dynamic for every same-kind pair of different types, else table A", () => {
  let dynamic = 0;
  for (const [r, c, want] of cells(TABLE_A)) {
    const sameKind = r !== c && r !== "boolean" && c !== "boolean" && REAL.has(r) === REAL.has(c);
    for (const ranks of [{ aRank: 0 }, { bRank: 2 }, {}]) {
      for (const promoteUnsafe of [false, true]) {
        const got = outcome(r, c, { pytorchScalarPromotion: true, promoteUnsafe, ...ranks });
        if (sameKind) assert.equal(got, "dynamic", `${r} ${c}`);
        else if (!promoteUnsafe) assert.equal(got, want, `${r} ${c}`);
      }
    }
    if (sameKind) dynamic++;
  }
  // 11 integer types (55 pairs) and 6 floats (15 pairs), in both orders.
  assert.equal(dynamic, 2 * (55 + 15));
});

test("dynamic as an input type gives dynamic with every type and option; the whitelist comes first", () => {
  for (const t of [...PROMOTE_TYPES, "dynamic"]) {
    for (const opts of [{}, { promoteUnsafe: true }, { pytorchScalarPromotion: true, aRank: 0, bRank: 1 }]) {
      const r = promoteTypes("dynamic", t, opts);
      assert.equal(r.name, "dynamic");
      assert.equal(r.dtype, undefined);
      assert.equal(promoteTypes(t, "dynamic", opts).name, "dynamic");
    }
  }
  // "undefined" is the deprecated 2025 alias of dynamic.
  assert.equal(promoteTypes("undefined", "f32").name, "dynamic");
  throwsCode(() => promoteTypes("nf4", "dynamic"), "UNSUPPORTED_TYPE", /nf4/);
  throwsCode(() => promoteTypes("dynamic", "string"), "UNSUPPORTED_TYPE", /string/);
  throwsCode(() => promoteTypes("string", "string"), "UNSUPPORTED_TYPE");
});

test("types outside the 18 are refused with a list of the 18", () => {
  const list = /boolean, u1, u4, u8, u16, u32, u64, i4, i8, i16, i32, i64, f8e4m3, f8e5m2, f16, bf16, f32, f64 \(and dynamic\)/;
  // OpenVINO's own names it does not accept, and tensorcast types OpenVINO does not have.
  for (const t of ["nf4", "f4e2m1", "f8e8m0", "string", "u2", "u3", "u6", "float8e4m3fnuz", "float8e5m2fnuz",
    "int2", "uint2", "float6e2m3", "float6e3m2", "float4e2m1", "float8e8m0", "complex64", "complex128", "STRING", 18]) {
    throwsCode(() => promoteTypes(t, "f32"), "UNSUPPORTED_TYPE", list);
    throwsCode(() => promoteTypes("f32", t), "UNSUPPORTED_TYPE", list);
  }
  throwsCode(() => promoteTypes(dtype("float8e5m2fnuz"), "f32"), "UNSUPPORTED_TYPE", /float8e5m2fnuz \(no OpenVINO type\)/);
  throwsCode(() => promoteTypes("uint2", "f32"), "UNSUPPORTED_TYPE", /"uint2" \(OpenVINO u2\)/);
  // Names nobody knows are UNKNOWN_DTYPE, with the same list.
  for (const t of ["foo", "", "i128", 0, 99]) throwsCode(() => promoteTypes(t, "f32"), "UNKNOWN_DTYPE", list);
});

test("OpenVINO spellings, tensorcast names, aliases, ONNX numbers and DTypes all work alike", () => {
  const tensorcast: Record<PromoteTypeName, string | undefined> = {
    boolean: "bool", u1: undefined, u4: "uint4", u8: "uint8", u16: "uint16", u32: "uint32", u64: "uint64",
    i4: "int4", i8: "int8", i16: "int16", i32: "int32", i64: "int64", f8e4m3: "float8e4m3fn", f8e5m2: "float8e5m2",
    f16: "float16", bf16: "bfloat16", f32: "float32", f64: "float64",
  };
  for (const ov of PROMOTE_TYPES) {
    const tc = tensorcast[ov];
    assert.equal(openvinoTypeName(ov), ov);
    assert.equal(openvinoTypeName(ov.toUpperCase()), ov);
    assert.equal(promoteTypes(ov, ov).dtype?.name, tc);
    if (!tc) continue;
    const t = dtype(tc);
    for (const spelling of [tc, t, t.onnx, t.onnxName]) {
      assert.equal(openvinoTypeName(spelling), ov);
      for (const other of PROMOTE_TYPES) {
        assert.equal(outcome(String(other), ov, {}), outcomeOf(() => promoteTypes(other, spelling)));
      }
    }
  }
  assert.equal(promoteTypes("float16", "bfloat16", { promoteUnsafe: true }).name, "f32");
  assert.equal(promoteTypes("u1", "i4").dtype?.name, "int4");
  assert.equal(promoteTypes("u1", "boolean").dtype, undefined);
  // One frozen object per result.
  assert.equal(promoteTypes("i8", "f32"), promoteTypes("f16", "f32"));
  assert.ok(Object.isFrozen(promoteTypes("i8", "f32")));
  assert.equal(DTYPES.filter((t) => promoteTypesAccepts(t.name)).length, 17);
});

function outcomeOf(fn: () => { name: string }): string {
  try {
    return fn().name;
  } catch (e) {
    const m = (e as Error).message;
    return `!${Object.values(PROMOTION_ERRORS).find((s) => m.includes(s))}`;
  }
}

function promoteTypesAccepts(t: string): boolean {
  try {
    openvinoTypeName(t);
    return true;
  } catch {
    return false;
  }
}

test("u64IntegerPromotionTarget: any OpenVINO type, returned as is; never used otherwise", () => {
  const unsafe = { promoteUnsafe: true };
  for (const target of ["i64", "i4", "u64", "f64", "f32", "boolean", "string", "f4e2m1", "f8e8m0", "u2"]) {
    const r = promoteTypes("u64", "i16", { ...unsafe, u64IntegerPromotionTarget: target });
    assert.equal(r.name, target);
    assert.equal(r.dtype?.name, dtype(target).name);
  }
  for (const target of ["nf4", "u3", "u6", "u1", "dynamic"]) {
    const r = promoteTypes("i4", "u64", { ...unsafe, u64IntegerPromotionTarget: target });
    assert.deepEqual([r.name, r.dtype], [target, undefined]);
  }
  // tensorcast spellings name the same OpenVINO type.
  assert.equal(promoteTypes("u64", "i8", { ...unsafe, u64IntegerPromotionTarget: "float64" }).name, "f64");
  assert.equal(promoteTypes("u64", "i8", { ...unsafe, u64IntegerPromotionTarget: dtype("int64") }).name, "i64");
  // Safe mode still throws; other pairs ignore the target.
  throwsCode(() => promoteTypes("u64", "i8", { u64IntegerPromotionTarget: "i64" }), PROMOTION_ERROR_CODE, /Unsigned integer input/);
  assert.equal(promoteTypes("u32", "i8", { ...unsafe, u64IntegerPromotionTarget: "f64" }).name, "i64");
  assert.equal(promoteTypes("u64", "u8", { ...unsafe, u64IntegerPromotionTarget: "f64" }).name, "u64");
  // A name OpenVINO cannot parse is refused, as OpenVINO refuses it ("Incorrect type").
  for (const bad of ["foo", "float8e4m3fnuz", "int2", "complex64", 99]) {
    throwsCode(() => promoteTypes("u64", "i8", { ...unsafe, u64IntegerPromotionTarget: bad }), "INVALID_ATTRIBUTE", /u64IntegerPromotionTarget/);
  }
  // ... even when the pair never reaches it: OpenVINO parses attributes before promoting.
  throwsCode(() => promoteTypes("f32", "f32", { u64IntegerPromotionTarget: "foo" }), "INVALID_ATTRIBUTE");
});

test("error messages: OpenVINO's sentence, the pair, why, and what promoteUnsafe would give", () => {
  const cases: [string, string, PromoteOptions, RegExp][] = [
    ["u8", "f8e4m3", {}, /^ConvertPromoteTypes\(u8, f8e4m3\): Integer input cannot be safely promoted to floating-point\. f8e4m3 has 8 bits, fewer than twice the 8 of u8\. With promoteUnsafe: true the result is f8e4m3\.$/],
    ["i64", "u8", { pytorchScalarPromotion: true, aRank: 0, bRank: 1 }, /^ConvertPromoteTypes\(i64, u8\): Scalar input cannot be PyTorch-like promoted using safe promotion rules\. the rank-0 i64 does not fit the u8 of the other input under the safe rule\. With promoteUnsafe: true the result is u8\.$/],
    ["i8", "u8", {}, /^ConvertPromoteTypes\(i8, u8\): Unsigned integer input cannot be safely promoted into any supported signed integer\. u8 needs a signed integer of 16 bits, i8 has 8\. With promoteUnsafe: true the result is i16\.$/],
    ["u64", "i64", {}, /u64 with a signed integer would need i128\. With promoteUnsafe: true the result is f32\.$/],
    ["bf16", "f16", {}, /^ConvertPromoteTypes\(bf16, f16\): Unsupported input element types for ConvertPromoteTypes with given attributes\. bf16 and f16 have the same width but different formats\. With promoteUnsafe: true the result is f32\.$/],
  ];
  for (const [a, b, opts, pattern] of cases) throwsCode(() => promoteTypes(a, b, opts), PROMOTION_ERROR_CODE, pattern);
});

test("options are checked", () => {
  throwsCode(() => promoteTypes("f32", "f16", { unsafe: true } as PromoteOptions), "INVALID_ATTRIBUTE", /unknown option "unsafe"/);
  throwsCode(() => promoteTypes("f32", "f16", { promoteUnsafe: 1 } as unknown as PromoteOptions), "INVALID_ATTRIBUTE", /promoteUnsafe/);
  throwsCode(() => promoteTypes("f32", "f16", { pytorchScalarPromotion: "yes" } as unknown as PromoteOptions), "INVALID_ATTRIBUTE");
  for (const bad of [-1, 1.5, NaN, "0", null]) {
    throwsCode(() => promoteTypes("f32", "f16", { aRank: bad } as unknown as PromoteOptions), "INVALID_ATTRIBUTE", /aRank/);
  }
  throwsCode(() => promoteTypes("f32", "f16", null as unknown as PromoteOptions), "INVALID_ATTRIBUTE");
});

// ---- convertPromoteTypes: the data side --------------------------------------------------------

test("convertPromoteTypes casts both inputs to the common type and keeps their shapes", () => {
  const a = Tensor.fromValues([1, -2, 3, 4, 5, 6], "int8", [2, 3]);
  const b = Tensor.fromValues([0.5], "float32", [1]);
  const [x, y] = convertPromoteTypes(a, b);
  assert.equal(x.dtype.name, "float32");
  assert.equal(y.dtype.name, "float32");
  assert.deepEqual(x.shape, [2, 3]);
  assert.deepEqual(y.shape, [1]);
  assert.deepEqual(x.toValues(), [1, -2, 3, 4, 5, 6]);
  assert.deepEqual(y.toValues(), [0.5]);
  // New tensors, even for an input already of the common type.
  assert.notEqual(y.data, b.data);

  // u64 + i8 unsafe -> the target (f32 by default); values go through our Cast.
  const [u, i] = convertPromoteTypes(Tensor.fromValues([2n ** 64n - 1n], "uint64"), Tensor.fromValues([-1], "int8"), { promoteUnsafe: true });
  assert.deepEqual([u.dtype.name, u.toValues(), i.toValues()], ["float32", [2 ** 64], [-1]]);
  // f16 + bf16 unsafe -> f32 exactly.
  const [h, g] = convertPromoteTypes(Tensor.fromValues([65504], "float16"), Tensor.fromValues([3.3895313892515355e38], "bfloat16"), { promoteUnsafe: true });
  assert.deepEqual([h.toValues(), g.toValues()], [[65504], [3.3895313892515355e38]]);
});

test("convertPromoteTypes takes the ranks from the shapes: shape [] is a scalar", () => {
  const scalar = Tensor.fromValues([300], "int64", []);
  const vector = Tensor.fromValues([1, 2, 3], "uint8", [3]);
  const torch = { pytorchScalarPromotion: true, promoteUnsafe: true };
  const [s, v] = convertPromoteTypes(scalar, vector, torch);
  // The lossy PyTorch rule: the scalar takes the tensor's type, and our Cast wraps 300 to 44.
  assert.deepEqual([s.dtype.name, s.shape, s.toValues(), v.toValues()], ["uint8", [], [44], [1, 2, 3]]);
  // A [1] tensor is not a scalar: the general rule applies (u8 + i64 -> i64).
  const [t] = convertPromoteTypes(Tensor.fromValues([300], "int64", [1]), vector, torch);
  assert.equal(t.dtype.name, "int64");
  throwsCode(() => convertPromoteTypes(scalar, vector, { pytorchScalarPromotion: true }), PROMOTION_ERROR_CODE, /Scalar input/);
  throwsCode(() => convertPromoteTypes(scalar, vector, { aRank: 1 } as PromoteOptions), "INVALID_ATTRIBUTE", /ranks from the tensors/);
});

test("convertPromoteTypes: any storable target, and refusals of what has no tensor or OpenVINO refuses", () => {
  const u64 = Tensor.fromValues([1n], "uint64");
  const i8 = Tensor.fromValues([1], "int8");
  for (const target of ["u1", "u3", "u6", "nf4", "dynamic"]) {
    throwsCode(() => convertPromoteTypes(u64, i8, { promoteUnsafe: true, u64IntegerPromotionTarget: target }), "UNSUPPORTED_TYPE", new RegExp(`is ${target} .*no tensor storage`));
  }
  // A target tensorcast can store is used as is, through our Cast.
  const [s, t] = convertPromoteTypes(Tensor.fromValues([2n ** 64n - 1n], "uint64"), Tensor.fromValues([-1], "int8"), { promoteUnsafe: true, u64IntegerPromotionTarget: "string" });
  assert.deepEqual([s.toValues(), t.toValues()], [["18446744073709551615"], ["-1"]]);
  const [f] = convertPromoteTypes(u64, i8, { promoteUnsafe: true, u64IntegerPromotionTarget: "f4e2m1" });
  assert.equal(f.dtype.name, "float4e2m1");
  throwsCode(() => convertPromoteTypes(Tensor.fromValues([1], "float8e4m3fnuz"), i8), "UNSUPPORTED_TYPE", /float8e4m3fnuz/);
  throwsCode(() => convertPromoteTypes(Tensor.fromValues(["a"], "string"), i8), "UNSUPPORTED_TYPE", /string/);
  throwsCode(() => convertPromoteTypes(u64, i8), PROMOTION_ERROR_CODE, /Unsigned integer input/);
  throwsCode(() => convertPromoteTypes([1] as unknown as Tensor, i8), "INVALID_DATA");
  throwsCode(() => convertPromoteTypes(u64, i8, 5 as unknown as PromoteOptions), "INVALID_ATTRIBUTE");
});
