/**
 * float32 -> string against an independent oracle of numpy's repr rule: for k = 1..9, the two
 * k-digit decimals around x (toExponential(k - 1), which rounds x's exact value, and its neighbour
 * on x's other side); the first k where either reads back to the same float32; of the two the
 * nearer, and on an exact decimal tie (toExponential takes the larger) the one whose last digit is
 * even. Printed in Python's repr layout. The inputs lean on the fast printer's edges: decades and the 1e9 / 1e-14 ends of its exact
 * scaling, powers of two (whose rounding interval is lopsided), values with few mantissa bits
 * (exact decimal ties, candidates on an interval end), subnormals, max, and 1e-4 / 1e16 where the
 * layout changes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor, cast } from "../../src/index.js";
import { compareDecimalExact, reprLayout } from "../support/decimal.js";
import { Rng } from "../support/rng.js";
import { runs } from "../support/suite.js";

/** Sign of (the decimal "d.ddde±X" - v) for a finite v > 0, exactly. */
function compareDecimal(text: string, v: number): number {
  const [mantissa, exponent] = text.split("e");
  const p = Number(exponent) - (mantissa.length - (mantissa.includes(".") ? 2 : 1));
  return compareDecimalExact(BigInt(mantissa.replace(".", "")), p, v);
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

/** Sign of (the decimal `text` - v), v finite and > 0: Number() rounds correctly, so only its own equality needs BigInt. */
function sideOf(text: string, v: number): number {
  const n = Number(text);
  return n !== v ? (n > v ? 1 : -1) : compareDecimal(text, v);
}

/** The k-digit decimal one unit from "d.ddde±X" up (+1) or down (-1), in the next or previous decade when it crosses one. */
function step(text: string, k: number, dir: 1 | -1): string {
  const [mantissa, exponent] = text.split("e");
  let digits = Number(mantissa.replace(".", "")) + dir; // k <= 9 digits: exact
  let exp10 = Number(exponent);
  if (digits === 10 ** k) { digits /= 10; exp10++; } // 9.99 + 1 unit = 1.00e+1
  else if (digits < 10 ** (k - 1)) { digits = 10 * digits + 9; exp10--; } // 1.00 - 1 unit = 9.99e-1
  const d = String(digits);
  return `${d[0]}${k > 1 ? `.${d.slice(1)}` : ""}e${exp10 < 0 ? "-" : "+"}${Math.abs(exp10)}`;
}

/** The k-digit string the rule picks for a > 0, or "" if neither k-digit decimal around a reads back. */
function choose(a: number, k: number): string {
  const near = a.toExponential(k - 1); // the nearer, or the larger on a tie
  const side = sideOf(near, a);
  if (side === 0) return near;
  const other = step(near, k, side > 0 ? -1 : 1);
  const nearFits = roundTrips(near, a);
  const otherFits = roundTrips(other, a);
  if (nearFits && otherFits) {
    // An exact tie: a is their midpoint, a (k+1)-digit decimal ending in 5.
    const mid = a.toExponential(k);
    const tie = mid[mid.indexOf("e") - 1] === "5" && sideOf(mid, a) === 0;
    const lastDigit = (s: string): number => Number(s[s.indexOf("e") - 1]);
    return tie && lastDigit(near) % 2 === 1 ? other : near;
  }
  return nearFits ? near : otherFits ? other : "";
}

/** The oracle's string for a float32 value. */
function oracle(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const a = Math.abs(x);
  let text = "";
  for (let k = 1; k <= 9 && !text; k++) text = choose(a, k);
  assert.ok(text, `no string of 9 digits or fewer reads back to ${a}`);
  const [mantissa, exponent] = text.split("e");
  return reprLayout(x, mantissa.replace(".", "").replace(/0+$/, "") || "0", Number(exponent));
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

test(`float32 -> string matches the oracle on ${runs(300_000)} random bit patterns and ${runs(100_000)} values as the benchmark draws them`, () => {
  const rng = new Rng(20240611);
  const random = new Uint32Array(runs(300_000));
  for (let i = 0; i < random.length; i++) random[i] = rng.u32();
  check(random, "random bits");
  const bench = new Uint32Array(runs(100_000));
  for (let i = 0; i < bench.length; i++) bench[i] = (rng.u32() & 0x807fffff) | ((127 - 16 + rng.below(33)) << 23);
  check(bench, "exponents in [-16, 16]");
});

test("float32 -> string matches the oracle on short decimals and their neighbours", () => {
  const rng = new Rng(77);
  const patterns: number[] = [];
  for (let i = 0; i < 20_000; i++) patterns.push(bitsOf(Number(`${1 + rng.below(99_999)}e${rng.below(80) - 45}`)));
  check(around(patterns, 2), "short decimals");
});
