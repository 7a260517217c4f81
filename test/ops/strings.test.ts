/**
 * String casts (Cast-9+): printing, parsing, errors, and the round-trip property
 * cast(cast(v, "string"), T) == v for every numeric type T, exhaustively where T has 16 bits or fewer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { throwsCode } from "../support/assertions.js";
import { everyCodeTensor } from "../support/cast-inputs.js";
import { big10, big2, compareScaled, dyadic, reprLayout } from "../support/decimal.js";
import fc from "fast-check";
import { DTYPES, Tensor, cast, castLike, type CastOptions, type DTypeName, type InputOf } from "../../src/index.js";
import { property } from "../support/suite.js";

function print(values: unknown[], from: DTypeName, opts: CastOptions = {}): string[] {
  return cast(Tensor.fromValues(values as InputOf<DTypeName>[], from), "string", opts).toValues() as string[];
}
function parse(strings: string[], to: DTypeName, opts: CastOptions = {}): unknown[] {
  return cast(Tensor.fromValues(strings, "string"), to, opts).toValues();
}

test("number -> string: shortest round-trip digits in the source type, Python repr layout", () => {
  assert.deepEqual(print([0.1, 1e-10, 1e20, -0, 0, NaN, Infinity, -Infinity, 1, 65504, 16777216, 1e-4, 1 / 3, 0.60484552, 1.4e-45], "float32"),
    ["0.1", "1e-10", "1e+20", "-0.0", "0.0", "nan", "inf", "-inf", "1.0", "65504.0", "16777216.0", "1e-04", "0.33333334", "0.6048455", "1e-45"]);
  assert.deepEqual(print([123456789, 1e15, 1 / 3, 1e16, 1e-5, 0.0001, 9999999999999998], "float64"),
    ["123456789.0", "1000000000000000.0", "0.3333333333333333", "1e+16", "1e-05", "0.0001", "9999999999999998.0"]);
  // float16 0.1 is 0.0999755859375; "0.1" is the shortest string that comes back to it.
  assert.deepEqual(print([0.1, 1 / 3, 65504, -(2 ** -24)], "float16"), ["0.1", "0.3333", "65500.0", "-6e-08"]);
  // Of the shortest, the nearest, and on an exact decimal tie the even one, as numpy prints them:
  // 2097152.25 is halfway between 2097152.2 and 2097152.3 (both read back to it); float16 2^-7 is
  // 0.0078125, halfway between 0.007812 and 0.007813. Below a power of two the rounding interval
  // is half as wide: 2^-96 = 1.26217744835...e-29, and 1.2621774e-29 is out of it but the farther
  // 1.2621775e-29 is in (so 8 digits, not 9); 2^87 and 2^90 likewise.
  assert.deepEqual(print([2097152.25, -344187.125, 2 ** -96, 2 ** 87, 2 ** 90, 2 ** -12], "float32"),
    ["2097152.2", "-344187.12", "1.2621775e-29", "1.5474251e+26", "1.2379401e+27", "0.00024414062"]);
  assert.deepEqual(print([2 ** -7, 0.15625, 2.0625], "float16"), ["0.007812", "0.1562", "2.062"]);
  assert.deepEqual(print([1.5, 3.3895313892515355e38], "bfloat16"), ["1.5", "3.39e+38"]);
  assert.deepEqual(print([448, 2 ** -9], "float8e4m3fn"), ["450.0", "0.002"]);
  // e8m0 prints exactly: its default round mode ("up") would move a shortened 2^-127 to 2^-126.
  assert.deepEqual(print([2 ** -127, 1], "float8e8m0"), ["5.877471754111438e-39", "1.0"]);
  assert.deepEqual(print([-6, 0.5], "float4e2m1"), ["-6.0", "0.5"]);
});

test("integers and bools print in full; bool as 1 / 0", () => {
  assert.deepEqual(print([-128, 127], "int8"), ["-128", "127"]);
  assert.deepEqual(print([2n ** 64n - 1n], "uint64"), ["18446744073709551615"]);
  assert.deepEqual(print([-(2n ** 63n)], "int64"), ["-9223372036854775808"]);
  assert.deepEqual(print([-8, 7], "int4"), ["-8", "7"]);
  assert.deepEqual(print([true, false], "bool"), ["1", "0"]);
});

test('stringFormat "onnxruntime": C %.8g with NaN / INF / -0', () => {
  const ort = { stringFormat: "onnxruntime" } as const;
  assert.deepEqual(print([0.1, 1e20, -0, NaN, -Infinity, 1, 1e6, 16777216, 123456789, 1e15, 1e-4, 1.4e-45, 0.60484552], "float32", ort),
    ["0.1", "1e+20", "-0", "NaN", "-INF", "1", "1000000", "16777216", "1.2345679e+08", "9.9999999e+14", "9.9999997e-05", "1.4012985e-45", "0.60484552"]);
  assert.deepEqual(print([123456789, 1e15, 1 / 3], "float64", ort), ["1.2345679e+08", "1e+15", "0.33333333"]);
  assert.deepEqual(print([0.1, 65504, 1 / 3], "float16", ort), ["0.099975586", "65504", "0.33325195"]);
  assert.deepEqual(print([2 ** -9], "float8e4m3fn", ort), ["0.001953125"]);
  assert.deepEqual(print([2 ** -127], "float8e8m0", ort), ["5.8774718e-39"]);
  // Exact decimal ties round half to even like printf, not up like JS's toExponential.
  assert.deepEqual(print([123456785, 123456775, 0.5], "float64", ort), ["1.2345678e+08", "1.2345678e+08", "0.5"]);
});

test("string -> float: the strict grammar, Inf / NaN in any case, out of range to +/-Inf", () => {
  assert.deepEqual(parse(["1.5", " 1.5", "1.5 ", "\t7\n", "+1.5", ".5", "5.", "1e3", "007", "-0"], "float64"),
    [1.5, 1.5, 1.5, 7, 1.5, 0.5, 5, 1000, 7, -0]);
  assert.deepEqual(parse(["inf", "INF", "+INF", "-inf", "Infinity", "iNfInItY", "1e500", "-1e500", "1e-400"], "float64"),
    [Infinity, Infinity, Infinity, -Infinity, Infinity, Infinity, Infinity, -Infinity, 0]);
  assert.ok((parse(["nan", "NaN", "NAN", "+nan"], "float32") as number[]).every(Number.isNaN));
  const negNaN = cast(Tensor.fromValues(["-nan"], "string"), "float32").bytes();
  assert.equal(negNaN[3] & 0x80, 0x80, "-nan keeps its sign");
  assert.deepEqual(parse(["1e39", "3.4028236e38"], "float32"), [Infinity, Infinity]);
  for (const bad of ["", "abc", "+-1", "--1", "e5", "0x10", "0x1p3", "1_000", "1.5abc", "1,5", "1e", "1.5e+", "infinite", "nan(123)", ".", "1 5"]) {
    throwsCode(() => parse(["0", bad], "float32"), "PARSE_ERROR", new RegExp(`element 1 \\(${JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\) does not parse as float32`));
  }
});

test("string -> float32 / float16 / bfloat16 is correctly rounded from the decimal, not through float64", () => {
  // 1 + 2^-24 is the float32 tie between 1 and 1 + 2^-23. A decimal just above it must round up,
  // although its nearest float64 is the tie itself (which would round to even, 1).
  const tie = "1.000000059604644775390625";
  assert.deepEqual(parse([tie, `${tie}0000000001`, "1.0000000596046447753906249999"], "float32"), [1, 1 + 2 ** -23, 1]);
  // float16: 1 + 2^-11 is the tie; bfloat16: 1 + 2^-8.
  assert.deepEqual(parse(["1.00048828125000000000001"], "float16"), [1 + 2 ** -10]);
  assert.deepEqual(parse(["1.00390625000000000000001", "1.00390625"], "bfloat16"), [1 + 2 ** -7, 1]);
  // The overflow threshold is a tie too: 65520 is Inf in float16, a hair below is 65504.
  assert.deepEqual(parse(["65520", "65519.99999999999999999"], "float16"), [Infinity, 65504]);
});

test("string -> float8 / float4 / e8m0: via float64, then the usual cast with its options", () => {
  assert.deepEqual(parse(["1e6", "-1e6"], "float8e4m3fn"), [448, -448]);
  assert.ok(Number.isNaN(parse(["1e6"], "float8e4m3fn", { saturate: false })[0] as number));
  assert.deepEqual(parse(["1.1", "3"], "float8e8m0", { roundMode: "down" }), [1, 2]);
  assert.deepEqual(parse(["2.5", "100"], "float4e2m1"), [2, 6]);
});

test("string -> integer: literals exactly to 64 bits then wrap; decimals truncate", () => {
  assert.deepEqual(parse([" 42", "42 ", "+7", "010", "-0", "100.5", "-1.5", "5.", "1e3"], "int32"), [42, 42, 7, 10, 0, 100, -1, 5, 1000]);
  assert.deepEqual(parse(["300", "-129"], "int8"), [44, 127]);
  assert.deepEqual(parse(["-1", "300"], "uint8"), [255, 44]);
  assert.deepEqual(parse(["4294967296", "2147483648"], "int32"), [0, -2147483648]);
  assert.deepEqual(parse(["9223372036854775807", "-9223372036854775808", "9223372036854775808"], "int64"),
    [2n ** 63n - 1n, -(2n ** 63n), -(2n ** 63n)]);
  assert.deepEqual(parse(["18446744073709551615", "-1", "9007199254740993"], "uint64"), [2n ** 64n - 1n, 2n ** 64n - 1n, 9007199254740993n]);
  assert.deepEqual(parse(["-9", "7.9", "1e9"], "int4"), [7, 7, 0]);
  // A decimal beyond int32 follows float -> int: INT_MIN.
  assert.deepEqual(parse(["3e9"], "int32"), [-2147483648]);
  throwsCode(() => parse(["18446744073709551616"], "uint64"), "PARSE_ERROR", /element 0 \("18446744073709551616"\) is outside the 64-bit range/);
  for (const bad of ["", "abc", "inf", "nan", "0x10", "1_000", "12abc", "true"]) {
    throwsCode(() => parse([bad], "int16"), "PARSE_ERROR", /does not parse as int16: expected an integer/);
  }
});

test("string -> bool: true / false in any case, or a number (non-zero is true)", () => {
  assert.deepEqual(parse(["true", "FALSE", "True", "0", "-0", "0.0", "2", "0.1", "nan", "1e-300"], "bool"),
    [true, false, true, false, false, false, true, true, true, true]);
  for (const bad of ["", "yes", "t", "0x1"]) throwsCode(() => parse([bad], "bool"), "PARSE_ERROR", /true \/ false in any case/);
});

test("a parse error returns nothing partial and names the element", () => {
  const x = Tensor.fromValues(["1", "2", "three", "4"], "string");
  throwsCode(() => cast(x, "float64"), "PARSE_ERROR", /^element 2 \("three"\)/);
});

test("strings exist from Cast-9 and CastLike-15; a bad stringFormat is an error", () => {
  const s = Tensor.fromValues(["1"], "string");
  throwsCode(() => cast(s, "float32", { opset: 8 }), "UNSUPPORTED_TYPE", /Cast-6 does not accept string/);
  assert.deepEqual(cast(s, "float32", { opset: 9 }).toValues(), [1]);
  assert.deepEqual(castLike(s, Tensor.zeros("int8", [0]), { opset: 15 }).toValues(), [1]);
  throwsCode(() => cast(s, "float32", { stringFormat: "c" } as never), "INVALID_ATTRIBUTE", /stringFormat must be one of python, onnxruntime/);
  assert.deepEqual(cast(s, "string").toValues(), ["1"]);
});

const NUMERIC = DTYPES.filter((t) => t.kind !== "string" && t.kind !== "complex");

for (const t of NUMERIC.filter((t) => t.bits <= 16)) {
  test(`every ${t.name} code survives cast to string and back, in both string formats`, () => {
    const x = everyCodeTensor(t);
    const want = x.toValues();
    for (const stringFormat of t.kind === "float" ? (["python", "onnxruntime"] as const) : (["python"] as const)) {
      // Saturation would turn e5m2's "inf" into 57344, and %.8g's 8 digits of 2^-127 round up under
      // e8m0's default "up": both by design, so the way back uses saturate=false / "nearest".
      const opts: CastOptions = t.name === "float8e8m0"
        ? (stringFormat === "onnxruntime" ? { roundMode: "nearest" } : {})
        : t.format ? { saturate: false } : {};
      const back = cast(cast(x, "string", { stringFormat }), t, opts).toValues();
      back.forEach((v, i) => {
        const w = want[i];
        if (!(Object.is(v, w) || (Number.isNaN(v) && Number.isNaN(w)))) {
          // %.8g keeps only 8 digits: enough for every type of 16 bits or fewer.
          assert.fail(`${t.name} code ${i} (${String(w)}) came back as ${String(v)} via ${stringFormat}`);
        }
      });
    }
  });
}

for (const t of NUMERIC.filter((t) => t.bits > 16)) {
  test(`random ${t.name} values survive cast to string and back`, () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffffffff }), { minLength: 2, maxLength: 64 }), (raw) => {
        const n = raw.length >> 1;
        const bytes = new Uint8Array(new Uint32Array(raw).buffer).slice(0, n * (t.bits / 8));
        const x = Tensor.fromBytes(bytes, t, [n]);
        const back = cast(cast(x, "string"), t).toValues();
        const want = x.toValues();
        back.forEach((v, i) => assert.ok(Object.is(v, want[i]) || (Number.isNaN(v) && Number.isNaN(want[i])), `${String(want[i])} came back as ${String(v)}`));
      }),
      property(200, 7),
    );
  });
}

// ---------------------------------------------------------------------------------------------
// number -> string against an independent oracle of numpy's repr rule, in exact BigInt arithmetic:
// at k digits, the two decimals around x (the floor and ceiling of x * 10^(k-1-e), e = floor(log10 x));
// the smallest k where either reads back to x; of the two the nearer, and on an exact decimal tie
// the one with the even last digit.

/** Whether the decimal c * 10^j reads back to x: an exact test, or a parse. */
type Fits = (c: bigint, j: number) => boolean;

/**
 * Exactly inside x's rounding interval, from the midpoint with its neighbour `below` (0 under the
 * smallest) to the midpoint with `above`, the ends included when x's code is even (ties to even).
 */
function intervalFits(x: number, below: number, above: number, closed: boolean): Fits {
  const mid = (y: number): [bigint, number] => {
    const [mx, ex] = dyadic(x);
    if (y === 0) return [mx, ex - 1];
    const [my, ey] = dyadic(y);
    const z = Math.min(ex, ey);
    return [(mx << BigInt(ex - z)) + (my << BigInt(ey - z)), z - 1];
  };
  const [lm, le] = mid(below);
  const [hm, he] = mid(above);
  return (c, j) => {
    const lo = compareScaled(c, j, lm, le);
    if (closed ? lo < 0 : lo <= 0) return false;
    const hi = compareScaled(c, j, hm, he);
    return closed ? hi <= 0 : hi < 0;
  };
}

/** Python's repr of x (finite, non-zero) by the oracle rule. */
function oracleRepr(x: number, fits: Fits): string {
  const a = Math.abs(x);
  const [m, e] = dyadic(a);
  let e10 = Math.floor(Math.log10(a));
  while (compareScaled(1n, e10, m, e) > 0) e10--;
  while (compareScaled(1n, e10 + 1, m, e) <= 0) e10++;
  // Some k-digit decimal fits for every k from the shortest on (a k-digit decimal has k + 1 digits
  // too): find the shortest by bisection, then take its candidates.
  let lo = 1;
  let hi = 17;
  while (lo < hi) {
    const k = (lo + hi) >> 1;
    if (candidateAt(m, e, e10, k, fits) === undefined) lo = k + 1;
    else hi = k;
  }
  const chosen = candidateAt(m, e, e10, lo, fits);
  if (chosen === undefined) throw new Error(`no decimal of 17 digits or fewer reads back to ${x}`);
  let digits = chosen.toString();
  let exp10 = e10;
  if (digits.length > lo) exp10++; // 99.. rounded up to 100..
  return reprLayout(x, digits.replace(/0+$/, "") || "0", exp10);
}

/**
 * The k-digit decimal (as an integer c, the value c * 10^(e10 - k + 1)) the rule picks for
 * a = m * 2^e, 10^e10 <= a < 10^(e10+1), or undefined if neither of the two around a fits.
 */
function candidateAt(m: bigint, e: number, e10: number, k: number, fits: Fits): bigint | undefined {
  const j = e10 - k + 1;
  // a * 10^-j = num / den
  const num = m * big2(Math.max(e, 0)) * big10(Math.max(-j, 0));
  const den = big2(Math.max(-e, 0)) * big10(Math.max(j, 0));
  const floor = num / den;
  const rest = num % den;
  if (rest === 0n) return floor; // a is this k-digit decimal
  // The nearer of floor and floor + 1, or on a tie the even one; if it does not fit, the other.
  const twice = 2n * rest;
  const nearer = twice < den || (twice === den && floor % 2n === 0n) ? floor : floor + 1n;
  const farther = nearer === floor ? floor + 1n : floor;
  return fits(nearer, j) ? nearer : fits(farther, j) ? farther : undefined;
}

/** Every code of a float type of 16 bits or fewer, its value, and its printed string. */
function everyCode(t: (typeof NUMERIC)[number]): { values: number[]; printed: string[] } {
  const x = everyCodeTensor(t);
  return { values: x.toValues() as number[], printed: cast(x, "string").toValues() as string[] };
}

for (const name of ["float16", "bfloat16"] as const) {
  test(`every ${name} prints the shortest digits that read back, the nearest of them, ties to even (exact oracle)`, () => {
    const t = NUMERIC.find((d) => d.name === name)!;
    const { values, printed } = everyCode(t);
    const half = 2 ** (t.bits - 1);
    const maxCode = name === "float16" ? 0x7bff : 0x7f7f; // the largest finite
    for (let c = 1; c <= maxCode; c++) {
      const x = values[c];
      const above = c < maxCode ? values[c + 1] : 2 * x - values[c - 1]; // past max: one more ulp
      const want = oracleRepr(x, intervalFits(x, values[c - 1], above, c % 2 === 0));
      if (printed[c] !== want) assert.fail(`${name} code 0x${c.toString(16)} (${x}) printed ${printed[c]}, oracle ${want}`);
      if (printed[c + half] !== `-${want}`) assert.fail(`${name} code 0x${(c + half).toString(16)} printed ${printed[c + half]}, oracle -${want}`);
    }
  });
}

for (const t of NUMERIC.filter((d) => d.kind === "float" && d.bits <= 8 && d.name !== "float8e8m0")) {
  test(`every ${t.name} prints the shortest digits that read back, the nearest of them, ties to even (oracle by parsing)`, () => {
    const { values, printed } = everyCode(t);
    printed.forEach((text, c) => {
      const x = values[c];
      if (!Number.isFinite(x) || x === 0) return;
      // Reading back is what cast(string -> type) does, without saturation.
      const fits: Fits = (d, j) => Object.is(parse([`${d}e${j}`], t.name, { saturate: false })[0], Math.abs(x));
      const want = oracleRepr(x, fits);
      if (text !== want) assert.fail(`${t.name} code ${c} (${x}) printed ${text}, oracle ${want}`);
    });
  });
}

test("float32 -> string: the shortest digits that read back, the nearest of them, ties to even, on 300k random float32 (exact oracle)", () => {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed ^ (seed >>> 13), 0x5bd1e995) + 0x6b43a9b5) >>> 0);
  const bits = new Uint32Array(300_000);
  for (let i = 0; i < bits.length; i++) bits[i] = next();
  // Random bit patterns: every binary exponent, so every decimal exponent and power-of-ten edge.
  const x = Tensor.fromBytes(new Uint8Array(bits.buffer), "float32", [bits.length]);
  const values = x.toValues() as number[];
  const printed = cast(x, "string").toValues() as string[];
  const word = new Uint32Array(1);
  const float = new Float32Array(word.buffer);
  const valueOf = (b: number): number => ((word[0] = b), float[0]);
  values.forEach((v, i) => {
    if (!Number.isFinite(v) || v === 0) return;
    const b = bits[i] & 0x7fffffff;
    const below = valueOf(b - 1);
    const above = b < 0x7f7fffff ? valueOf(b + 1) : 2 * Math.abs(v) - below;
    const want = oracleRepr(v, intervalFits(Math.abs(v), below, above, b % 2 === 0));
    if (printed[i] !== want) assert.fail(`float32 0x${bits[i].toString(16)} (${v}) printed ${printed[i]}, oracle ${want}`);
  });
});
