/**
 * float32 -> string against an independent oracle: the shortest k (1..9) whose toExponential(k - 1)
 * reads back to the same float32, in Python's repr layout. toExponential rounds x's exact value
 * (half up on an exact decimal tie), so among the shortest strings it gives the closest to x.
 * The inputs lean on the fast printer's edges: decades and the 1e9 / 1e-14 ends of its exact
 * scaling, powers of two (whose rounding interval is lopsided), values with few mantissa bits
 * (exact decimal ties, candidates on an interval end), subnormals, max, and 1e-4 / 1e16 where the
 * layout changes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor, cast } from "../../src/index.js";
import { Rng } from "../support/rng.js";

const f64 = new Float64Array(1);
const f64Bits = new BigUint64Array(f64.buffer);

/** Sign of (the decimal "d.ddde±X" - v) for a finite v > 0, exactly. */
function compareDecimal(text: string, v: number): number {
  const [mantissa, exponent] = text.split("e");
  const digits = BigInt(mantissa.replace(".", ""));
  const p = Number(exponent) - (mantissa.length - (mantissa.includes(".") ? 2 : 1));
  f64[0] = v;
  const bits = f64Bits[0];
  const field = Number(bits >> 52n);
  const m = field === 0 ? bits & 0xfffffffffffffn : (bits & 0xfffffffffffffn) | (1n << 52n);
  const e = (field === 0 ? 1 : field) - 1075;
  // digits * 10^p against m * 2^e, both sides scaled to integers.
  const lhs = digits * 10n ** BigInt(Math.max(p, 0)) * 2n ** BigInt(Math.max(-e, 0));
  const rhs = m * 2n ** BigInt(Math.max(e, 0)) * 10n ** BigInt(Math.max(-p, 0));
  return lhs > rhs ? 1 : lhs < rhs ? -1 : 0;
}

/** Whether the decimal `text` rounds (once, to nearest even) to the float32 x > 0. */
function roundTrips(text: string, x: number): boolean {
  const v = Number(text);
  const r = Math.fround(v);
  if (r !== v) {
    // Number() then fround rounds twice, which goes wrong only when v is exactly halfway between
    // two float32 (then 2v - r is the other one) and the decimal itself is not.
    const other = 2 * v - r;
    if (Math.fround(other) === other) {
      const side = compareDecimal(text, v);
      if (side !== 0) return (side > 0 ? Math.max(r, other) : Math.min(r, other)) === x;
    }
  }
  return r === x;
}

/** The oracle's string for a float32 value. */
function oracle(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const a = Math.abs(x);
  let text = "";
  for (let k = 1; k <= 9 && !text; k++) {
    const s = a.toExponential(k - 1);
    if (roundTrips(s, a)) text = s;
  }
  assert.ok(text, `no string of 9 digits or fewer reads back to ${a}`);
  const [mantissa, exponent] = text.split("e");
  const digits = mantissa.replace(".", "").replace(/0+$/, "") || "0";
  const exp10 = Number(exponent);
  let body: string;
  if (a >= 1e-4 && a < 1e16) {
    if (exp10 < 0) body = `0.${"0".repeat(-exp10 - 1)}${digits}`;
    else {
      const padded = digits.padEnd(exp10 + 1, "0");
      body = `${padded.slice(0, exp10 + 1)}.${padded.slice(exp10 + 1) || "0"}`;
    }
  } else {
    const e = Math.abs(exp10);
    body = `${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${exp10 < 0 ? "-" : "+"}${e < 10 ? "0" : ""}${e}`;
  }
  return x < 0 ? `-${body}` : body;
}

function check(bits: Uint32Array, what: string): void {
  const x = Tensor.fromBytes(new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength), "float32", [bits.length]);
  const printed = cast(x, "string").toValues() as string[];
  const values = new Float32Array(bits.buffer, bits.byteOffset, bits.length);
  for (let i = 0; i < bits.length; i++) {
    const want = oracle(values[i]);
    if (printed[i] !== want) {
      assert.fail(`${what}: float32 0x${bits[i].toString(16).padStart(8, "0")} (${values[i]}) printed ${printed[i]}, oracle ${want}`);
    }
  }
}

/** The float32 bits of Math.fround(v). */
function bitsOf(v: number): number {
  return new Uint32Array(new Float32Array([v]).buffer)[0];
}

/** Each pattern, its neighbours up to `spread` codes away, and all of them negated. */
function around(patterns: number[], spread: number): Uint32Array {
  const out: number[] = [];
  for (const p of patterns) {
    for (let d = -spread; d <= spread; d++) {
      const b = p + d;
      if (b >= 0 && b <= 0x7f800000) out.push(b, (b | 0x80000000) >>> 0);
    }
  }
  return Uint32Array.from(out);
}

test("float32 -> string matches the oracle at powers of two, with their neighbours", () => {
  const powers: number[] = [];
  for (let field = 1; field <= 254; field++) powers.push(field << 23);
  for (let bit = 0; bit < 23; bit++) powers.push(1 << bit); // subnormal powers of two
  check(around(powers, 3), "powers of two");
});

test("float32 -> string matches the oracle at powers of ten and the layout and scaling edges", () => {
  const edges: number[] = [];
  for (let n = -45; n <= 38; n++) edges.push(bitsOf(Number(`1e${n}`)));
  // Where the layout changes, and the ends of the fast printer's exact scaling by 10^0..10^22.
  for (const v of [1e-4, 1e16, 1e9, 1e8, 999999999.5, 1e-14, 1e-15, 9.99999999e-15]) edges.push(bitsOf(v));
  edges.push(0x7f7fffff, 0x00800000, 0x007fffff, 0x00000001, 0x00000000, 0x7f800000);
  check(around(edges, 40), "powers of ten and edges");
  const special = new Float32Array([NaN, -NaN, Infinity, -Infinity, 0, -0]);
  assert.deepEqual(cast(Tensor.fromValues(Array.from(special), "float32"), "string").toValues(), ["nan", "nan", "inf", "-inf", "0.0", "-0.0"]);
});

test("float32 -> string matches the oracle on values with few mantissa bits (decimal ties, exact interval ends)", () => {
  const rng = new Rng(0x5eed);
  const bits = new Uint32Array(100_000);
  for (let i = 0; i < bits.length; i++) {
    // Up to 4 set bits at the top of the mantissa: short exact decimals such as 2097152.25.
    let mantissa = 0;
    for (let j = rng.below(5); j > 0; j--) mantissa |= 1 << (22 - rng.below(12));
    bits[i] = ((1 + rng.below(254)) << 23) | mantissa | (rng.below(2) << 31);
  }
  check(bits, "few mantissa bits");
  // Integer-valued float32 where their spacing grows past 1 (2^24, 2^25) and where X = x / 10^0
  // meets the scaling's upper end (1e8, 1e9): candidates there often sit exactly on an interval end.
  check(around([2 ** 24, 2 ** 25, 1e8, 1e9].map(bitsOf), 2000), "integers");
});

test("float32 -> string matches the oracle on 300k random bit patterns and 100k values as the benchmark draws them", () => {
  const rng = new Rng(20240611);
  const random = new Uint32Array(300_000);
  for (let i = 0; i < random.length; i++) random[i] = rng.u32();
  check(random, "random bits");
  const bench = new Uint32Array(100_000);
  for (let i = 0; i < bench.length; i++) bench[i] = (rng.u32() & 0x807fffff) | ((127 - 16 + rng.below(33)) << 23);
  check(bench, "exponents in [-16, 16]");
});

test("float32 -> string matches the oracle on short decimals and their neighbours", () => {
  const rng = new Rng(77);
  const patterns: number[] = [];
  for (let i = 0; i < 20_000; i++) patterns.push(bitsOf(Number(`${1 + rng.below(99_999)}e${rng.below(80) - 45}`)));
  check(around(patterns, 2), "short decimals");
});
