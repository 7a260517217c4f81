import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DTYPES, decodeFloat, dtype, encodeE8M0, encodeFloat, isCodedFloat, isNegativeCode, nanCode, overflowThreshold,
  roundsPastMax, type DType,
} from "../../src/index.js";
import { textbookValue } from "../support/oracle.js";

const CODED = DTYPES.filter(isCodedFloat);

test("the coded float types are the ten small formats", () => {
  assert.deepEqual(CODED.map((t) => t.name), [
    "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1",
    "float8e8m0", "float6e2m3", "float6e3m2",
  ]);
});

for (const t of CODED) {
  const f = t.format!;
  const codes = 2 ** t.bits;

  test(`${t.name}: every one of the ${codes} codes decodes to its textbook value`, () => {
    for (let c = 0; c < codes; c++) {
      const got = decodeFloat(f, c);
      const want = textbookValue(f, c);
      if (!Object.is(got, want)) assert.fail(`code 0x${c.toString(16)}: got ${got}, want ${want}`);
    }
  });

  test(`${t.name}: every code re-encodes to itself; NaN codes to the canonical NaN of their sign`, () => {
    for (let c = 0; c < codes; c++) {
      const v = decodeFloat(f, c);
      if (Number.isNaN(v)) {
        const canonical = nanCode(f, isNegativeCode(f, c));
        assert.ok(Number.isNaN(decodeFloat(f, canonical)), `nanCode for 0x${c.toString(16)} is not NaN`);
        continue;
      }
      if (t.name === "float8e8m0") {
        for (const mode of ["up", "down", "nearest"] as const) {
          for (const sat of [true, false]) assert.equal(encodeE8M0(v, sat, mode), c, `0x${c.toString(16)} ${mode}`);
        }
        continue;
      }
      for (const sat of [true, false]) {
        const back = encodeFloat(f, v, sat);
        // Saturation is the one exception: a float8 infinity saturates to +/-max (Cast-19+).
        const saturates = sat && f.overflow === "saturable" && !Number.isFinite(v);
        const want = saturates ? f.maxCode + (v < 0 ? 2 ** (f.expBits + f.manBits) : 0) : c;
        if (back !== want) assert.fail(`code 0x${c.toString(16)} (${v}) saturate=${sat} re-encodes to 0x${back.toString(16)}`);
      }
    }
  });

  test(`${t.name}: the table's limits are what the codes say`, () => {
    const values: number[] = [];
    for (let c = 0; c < codes; c++) {
      const v = decodeFloat(f, c);
      if (Number.isFinite(v)) values.push(v);
    }
    const positive = values.filter((v) => v > 0);
    assert.equal(Math.max(...values), t.max);
    assert.equal(decodeFloat(f, f.maxCode), t.max);
    assert.equal(Math.min(...values), t.min);
    assert.equal(Math.min(...positive), t.minSubnormal ?? t.minNormal);
    if (t.minSubnormal !== undefined) {
      // The smallest normal is the first code with exponent field 1.
      assert.equal(decodeFloat(f, 2 ** f.manBits), t.minNormal);
    }
  });
}

test("NaN codes: quiet NaN of the target with the input's sign where the format has one", () => {
  const hex = (t: DType, neg: boolean) => nanCode(t.format!, neg).toString(16);
  assert.equal(hex(dtype("float16"), false), "7e00");
  assert.equal(hex(dtype("float16"), true), "fe00");
  assert.equal(hex(dtype("bfloat16"), false), "7fc0");
  assert.equal(hex(dtype("float8e4m3fn"), false), "7f");
  assert.equal(hex(dtype("float8e4m3fn"), true), "ff");
  assert.equal(hex(dtype("float8e5m2"), false), "7e");
  assert.equal(hex(dtype("float8e5m2"), true), "fe");
  assert.equal(hex(dtype("float8e4m3fnuz"), true), "80");
  assert.equal(hex(dtype("float8e5m2fnuz"), false), "80");
  assert.equal(hex(dtype("float8e8m0"), false), "ff");
  // No NaN in float4/float6: +NaN -> the -0 code, -NaN -> +0, as the official vector expects.
  assert.equal(hex(dtype("float4e2m1"), false), "8");
  assert.equal(hex(dtype("float4e2m1"), true), "0");
  assert.equal(hex(dtype("float6e2m3"), false), "20");
  assert.equal(hex(dtype("float6e3m2"), true), "0");
});

test("float32 through the generic encoder equals Math.fround on 200k random float64 values", () => {
  const f = dtype("float32").format!;
  const bits = new Uint32Array(1);
  const asFloat = new Float32Array(bits.buffer);
  const scratch = new Float64Array(1);
  const words = new Uint32Array(scratch.buffer);
  let seed = 0x9e3779b9;
  const next = () => (seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0);
  for (let i = 0; i < 200_000; i++) {
    words[0] = next();
    // Keep the exponent near float32's range so rounding, subnormals and overflow all occur.
    words[1] = (next() & 0x800fffff) | ((0x360 + (next() % 0x140)) << 20);
    const x = scratch[0];
    asFloat[0] = Math.fround(x);
    const got = encodeFloat(f, x, true);
    if (got !== bits[0]) assert.fail(`${x}: generic 0x${got.toString(16)}, Math.fround 0x${bits[0].toString(16)}`);
  }
});

test("overflowThreshold / roundsPastMax: where RNE with an unbounded exponent leaves the range", () => {
  const f = (n: string) => dtype(n).format!;
  assert.deepEqual(overflowThreshold(f("float8e4m3fn")), { at: 464, tieOverflows: false });
  assert.deepEqual(overflowThreshold(f("float8e4m3fnuz")), { at: 248, tieOverflows: true });
  assert.deepEqual(overflowThreshold(f("float16")), { at: 65520, tieOverflows: true });
  assert.deepEqual(overflowThreshold(f("float4e2m1")), { at: 7, tieOverflows: true });
  assert.equal(roundsPastMax(f("float8e4m3fn"), 464), false);
  assert.equal(roundsPastMax(f("float8e4m3fn"), 464.00003), true);
  assert.equal(roundsPastMax(f("float8e4m3fnuz"), 248), true);
  assert.equal(roundsPastMax(f("float8e5m2"), 61439), false);
  assert.equal(roundsPastMax(f("float8e5m2"), 61440), true);
  // The same boundary the encoder uses: every code's value either side of it agrees with saturate=false.
  for (const t of CODED.filter((t) => t.name !== "float8e8m0")) {
    const { at } = overflowThreshold(t.format!);
    for (const a of [at * (1 - 2 ** -30), at, at * (1 + 2 ** -30)]) {
      const code = encodeFloat(t.format!, a, false);
      const inRange = Number.isFinite(decodeFloat(t.format!, code)) && code <= t.format!.maxCode;
      assert.equal(roundsPastMax(t.format!, a), t.format!.overflow === "clamp" ? a > at || (a === at && t.format!.maxCode % 2 === 1) : !inRange, `${t.name} ${a}`);
    }
  }
});
