/**
 * Exhaustive checks of the cast kernel against the independent oracles in test/support/oracle.ts:
 * every code of every type of 16 bits or fewer through float64 and back, and every float16 and
 * bfloat16 code into every 8-, 6-, 4- and 2-bit type, under every saturate / round_mode setting.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { DTYPES, Tensor, cast, dtype, type DType, type DTypeName } from "../../src/index.js";
import { everyCodeTensor } from "../support/cast-inputs.js";
import { bruteForceOracle, e8m0Oracle, textbookValue, x86LowBits } from "../support/oracle.js";

/** The test's own bit-stream unpacking (independent of src/dtype/packing.ts). */
function readBits(bytes: Uint8Array, bits: number, index: number): number {
  let code = 0;
  for (let b = 0; b < bits; b++) {
    const bit = index * bits + b;
    code |= ((bytes[bit >> 3] >> (bit & 7)) & 1) << b;
  }
  return code;
}

/** The raw code of every element of a tensor of 16 bits or fewer. */
function codesOf(t: Tensor): number[] {
  const bytes = t.bytes();
  const out: number[] = [];
  for (let i = 0; i < t.size; i++) {
    if (t.dtype.bits === 16) out.push(bytes[2 * i] | (bytes[2 * i + 1] << 8));
    else out.push(readBits(bytes, t.dtype.bits, i));
  }
  return out;
}

/** The exact value of every code, by the textbook formula or two's complement. */
function expectedValue(t: DType, code: number): number {
  if (t.format) return textbookValue(t.format, code);
  if (t.kind === "bool") return code !== 0 ? 1 : 0;
  if (t.kind === "int" && code >= 2 ** (t.bits - 1)) return code - 2 ** t.bits;
  return code;
}

const SMALL = DTYPES.filter((t) => t.bits > 0 && t.bits <= 16 && t.kind !== "string" && t.kind !== "complex");

for (const t of SMALL) {
  test(`${t.name}: every code decodes exactly through the cast kernel and casts back to itself`, () => {
    const src = everyCodeTensor(t);
    const wide = cast(src, "float64");
    const values = wide.toValues() as number[];
    values.forEach((v, c) => {
      const want = expectedValue(t, c);
      if (!Object.is(v, want) && !(Number.isNaN(v) && Number.isNaN(want))) {
        assert.fail(`code 0x${c.toString(16)}: got ${v}, want ${want}`);
      }
    });
    if (t.kind === "bool") return;
    const back = codesOf(cast(wide, t, t.name === "float8e8m0" ? { roundMode: "nearest" } : { saturate: false }));
    back.forEach((code, c) => {
      if (Number.isNaN(values[c])) {
        assert.ok(Number.isNaN(expectedValue(t, code)), `NaN code 0x${c.toString(16)} came back as 0x${code.toString(16)}`);
      } else if (code !== c) {
        assert.fail(`code 0x${c.toString(16)} came back as 0x${code.toString(16)}`);
      }
    });
  });
}

const NARROW: DTypeName[] = [
  "int8", "uint8", "bool", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float8e8m0",
  "float6e2m3", "float6e3m2", "int4", "uint4", "float4e2m1", "int2", "uint2",
];

/** The code the spec's rules give for `x` (the exact source value; `negative` is its sign bit). */
function expectedCode(to: DType, x: number, negative: boolean, saturate: boolean, mode: "up" | "down" | "nearest"): number {
  if (to.kind === "bool") return x !== 0 ? 1 : 0;
  if (to.kind === "int" || to.kind === "uint") {
    const v = x86LowBits(x, to);
    return v < 0 ? v + 2 ** to.bits : v;
  }
  if (to.name === "float8e8m0") return e8m0Oracle(x, saturate, mode);
  const f = to.format!;
  if (Number.isNaN(x)) {
    const sign = 2 ** (f.expBits + f.manBits);
    switch (f.nan) {
      case "ieee": return (2 ** f.expBits - 1) * 2 ** f.manBits + 2 ** (f.manBits - 1) + (negative ? sign : 0);
      case "allOnes": return sign - 1 + (negative ? sign : 0);
      case "negativeZero": return sign;
      case "none": return negative ? 0 : sign;
    }
  }
  return bruteForceOracle(f).encode(x, saturate);
}

for (const fromName of ["float16", "bfloat16"] as const) {
  const from = dtype(fromName);
  const src = everyCodeTensor(from);
  const sourceCodes = codesOf(src);
  const sourceValues = sourceCodes.map((c) => textbookValue(from.format!, c));
  for (const toName of NARROW) {
    const to = dtype(toName);
    const settings: { saturate: boolean; roundMode?: "up" | "down" | "nearest" }[] =
      toName === "float8e8m0"
        ? [true, false].flatMap((saturate) => (["up", "down", "nearest"] as const).map((roundMode) => ({ saturate, roundMode })))
        : [{ saturate: true }, { saturate: false }];
    test(`every ${fromName} code to ${toName} (${settings.length} settings)`, () => {
      const oracle = to.format && to.name !== "float8e8m0" ? bruteForceOracle(to.format) : undefined;
      for (const s of settings) {
        const got = codesOf(cast(src, to, s));
        for (let c = 0; c < sourceCodes.length; c++) {
          const x = sourceValues[c];
          const negative = c >= 2 ** 15;
          const want = oracle && !Number.isNaN(x)
            ? oracle.encode(x, s.saturate)
            : expectedCode(to, x, negative, s.saturate, s.roundMode ?? "up");
          if (got[c] !== want) {
            assert.fail(`${fromName} 0x${c.toString(16)} (${x}) -> ${toName} ${JSON.stringify(s)}: ` +
              `got 0x${got[c].toString(16)}, want 0x${want.toString(16)}`);
          }
        }
      }
    });
  }
}
