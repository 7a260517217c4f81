/**
 * string -> float: the one-pass scanner of src/ops/strings.ts against the path it short-cuts, spelled
 * out here on its own: the grammar as a regular expression, Number() for the float64 value, for
 * float32 / float16 / bfloat16 a move of one float64 ulp off a target tie when the exact decimal
 * (compared with BigInt) is not on it, then the usual float64 -> T cast. Bit for bit (-0 and NaN
 * signs included) on ~300k generated strings for float32, float16, bfloat16, float64 and
 * float8e4m3fn, and the same PARSE_ERROR message for every string outside the grammar.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tensor, TensorcastError, cast, type DTypeName } from "../../src/index.js";
import { compareDecimalExact } from "../support/decimal.js";
import { Rng } from "../support/rng.js";

const DECIMAL = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/;
const SPECIAL = /^\s*([+-]?)(inf|infinity|nan)\s*$/i;

/** The formats parsed with one rounding: mantissa bits and the exponent of the smallest normal. */
const EXACT: Partial<Record<DTypeName, { man: number; emin: number }>> = {
  float32: { man: 23, emin: -126 },
  float16: { man: 10, emin: -14 },
  bfloat16: { man: 7, emin: -126 },
};

const f64 = new Float64Array(1);
const f64Bits = new BigUint64Array(f64.buffer);

/** Whether a > 0 (finite) is exactly halfway between two neighbours of the format (or past its max). */
function isTie(a: number, man: number, emin: number): boolean {
  f64[0] = a;
  const field = Number(f64Bits[0] >> 52n);
  if (field === 0) return false; // float64 subnormals are far below every target's smallest tie
  const e = Math.max(field - 1023, emin);
  const q = a * 2 ** (man - e);
  return q - Math.floor(q) === 0.5;
}

/** Sign of (whole.fraction * 10^exp10 - a) for a finite a > 0, exactly. */
function compareExact(whole: string, fraction: string, exp10: number, a: number): number {
  return compareDecimalExact(BigInt(whole + fraction || "0"), exp10 - fraction.length, a);
}

/** The float64 one ulp from x (finite, non-zero) away from zero or toward it. */
function nudge(x: number, away: boolean): number {
  f64[0] = x;
  f64Bits[0] += away ? 1n : -1n;
  return f64[0];
}

/**
 * The reference float64 for `text` (NaN with its sign) at out[i], or false for a parse error:
 * what the parser did before the scanner, spelled out independently.
 */
function reference(text: string, to: DTypeName, out: Float64Array, i: number): boolean {
  const m = DECIMAL.exec(text);
  if (m && (m[2] !== "" || (m[3] ?? "") !== "")) {
    const x = Number(text);
    const exact = EXACT[to];
    const a = Math.abs(x);
    if (exact && a > 0 && a < Infinity && isTie(a, exact.man, exact.emin)) {
      // Number() landed on a target tie: the exact decimal decides the side.
      const side = compareExact(m[2], m[3] ?? "", Number(m[4] ?? "0"), a);
      out[i] = side === 0 ? x : nudge(x, side > 0);
    } else out[i] = x;
    return true;
  }
  const s = SPECIAL.exec(text);
  if (!s) return false;
  if (s[2].toLowerCase() === "nan") {
    const words = new Uint32Array(out.buffer, out.byteOffset + 8 * i, 2);
    words[0] = 0;
    words[1] = s[1] === "-" ? 0xfff80000 : 0x7ff80000;
  } else out[i] = s[1] === "-" ? -Infinity : Infinity;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Inputs

function digitString(rng: Rng, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += String.fromCharCode(48 + rng.below(10));
  return s;
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[rng.below(items.length)];
}

/** A random length, mostly short, sometimes past 20 digits. */
function length(rng: Rng): number {
  const r = rng.below(16);
  return r < 10 ? r : r < 14 ? 10 + rng.below(8) : 18 + rng.below(15);
}

/** Sign, digits with leading zeros, point, fraction with trailing zeros, exponent: any mix. */
function randomDecimal(rng: Rng): string {
  const sign = pick(rng, ["", "", "", "-", "+"]);
  const whole = rng.below(5) === 0 ? "" : "0".repeat(rng.below(4) === 0 ? rng.below(4) : 0) + digitString(rng, length(rng));
  const point = rng.below(3) !== 0 ? "." : "";
  const fraction = point ? digitString(rng, length(rng)) + "0".repeat(rng.below(4) === 0 ? rng.below(5) : 0) : "";
  let exponent = "";
  const e = rng.below(8);
  if (e < 3) {
    const digits = e === 0 && rng.below(4) === 0
      ? digitString(rng, 6 + rng.below(10)) // huge: 1e123456789
      : "0".repeat(rng.below(6) === 0 ? rng.below(3) : 0) + String(rng.below(rng.below(2) ? 30 : 400));
    exponent = pick(rng, ["e", "E"]) + pick(rng, ["", "+", "-", "-"]) + digits;
  }
  return sign + whole + point + fraction + exponent;
}

const JUNK = ["+", "-", ".", "e", "E", " ", "x", "_", ",", "0", "5", "a", "\u0661", "\uff11", "\u00a0", "i", "n"];
const SPACE = [" ", "\t", "\n", "\r", "\v", "\f", "\u00a0", "\u2028", "\u3000", "\ufeff", "  "];

/** A string, sometimes broken: a junk character inserted or one deleted; sometimes wrapped in whitespace. */
function mutate(rng: Rng, s: string): string {
  const r = rng.below(20);
  if (r === 0) {
    const at = rng.below(s.length + 1);
    s = s.slice(0, at) + pick(rng, JUNK) + s.slice(at);
  } else if (r === 1 && s.length > 0) {
    const at = rng.below(s.length);
    s = s.slice(0, at) + s.slice(at + 1);
  }
  const w = rng.below(12);
  if (w === 0) s = pick(rng, SPACE) + s;
  else if (w === 1) s += pick(rng, SPACE);
  else if (w === 2) s = pick(rng, SPACE) + s + pick(rng, SPACE);
  return s;
}

/** value = digits * 10^-point as a positional decimal ("0.000123", "1500.0", "7"). */
function positional(digits: string, point: number): string {
  if (point <= 0) return digits + "0".repeat(-point);
  const padded = digits.padStart(point + 1, "0");
  return `${padded.slice(0, padded.length - point)}.${padded.slice(padded.length - point)}`;
}

/** The same value in scientific form "d.ddd" + "e" + exponent. */
function scientific(digits: string, point: number, e: string): string {
  const trimmed = digits.replace(/^0+/, "") || "0";
  const exp10 = trimmed.length - 1 - point;
  return `${trimmed[0]}${trimmed.length > 1 ? `.${trimmed.slice(1)}` : ""}${e}${exp10}`;
}

/**
 * The exact decimal of a random tie of a format with `man` mantissa bits and exponents
 * emin..emax (a subnormal one, the overflow threshold, or a normal one), and of its neighbours
 * 10^-(point + z + 1) above and below: each positional or scientific.
 */
function ties(rng: Rng, man: number, emin: number, emax: number): string[] {
  let n: bigint; // the tie is n * 2^k
  let k: number;
  const r = rng.below(20);
  if (r === 0) {
    n = BigInt(rng.below(2 ** man)) * 2n + 1n; // (j + 1/2) ulp of the subnormals
    k = emin - man - 1;
  } else if (r === 1) {
    n = (1n << BigInt(man + 2)) - 1n; // 2^(emax+1) - ulp/2: the overflow threshold
    k = emax - man - 1;
  } else {
    n = (1n << BigInt(man + 1)) + BigInt(rng.below(2 ** man)) * 2n + 1n;
    k = emin + rng.below(emax - emin + 1) - man - 1;
  }
  // n * 2^k = n * 5^-k / 10^-k when k < 0.
  const digits = k >= 0 ? (n << BigInt(k)).toString() : (n * 5n ** BigInt(-k)).toString();
  const point = k >= 0 ? 0 : -k;
  const z = rng.below(6);
  const scale = 10n ** BigInt(z + 1);
  const above = (BigInt(digits) * scale + 1n).toString();
  const below = (BigInt(digits) * scale - 1n).toString();
  const out: string[] = [];
  for (const [d, p] of [[digits, point], [above, point + z + 1], [below, point + z + 1], [digits + "000", point + 3]] as const) {
    out.push(rng.below(3) === 0 ? scientific(d, p, pick(rng, ["e", "E", "e+"])) : positional(d, p));
  }
  if (rng.below(2)) for (let j = 0; j < out.length; j++) if (!out[j].includes("e") && !out[j].includes("E")) out[j] = `-${out[j]}`;
  return out;
}

/** Printed float32 (tensorcast's own repr) and float64 (JS's layouts), from random bits. */
function printed(rng: Rng, count: number): string[] {
  const bits = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    bits[i] = rng.below(4) === 0 ? rng.u32() : (rng.u32() & 0x807fffff) | ((127 - 16 + rng.below(33)) << 23);
  }
  const out = cast(Tensor.fromBytes(new Uint8Array(bits.buffer), "float32", [count]), "string").toValues() as string[];
  const w = new Uint32Array(2);
  const d = new Float64Array(w.buffer);
  for (let i = 0; i < count; i++) {
    w[0] = rng.u32();
    w[1] = rng.below(2) ? rng.u32() : (rng.u32() & 0x800fffff) | ((1023 - 60 + rng.below(121)) << 20);
    const x = d[0];
    switch (rng.below(5)) {
      case 0: out.push(String(x)); break;
      case 1: out.push(x.toExponential(rng.below(21))); break;
      case 2: out.push(Math.abs(x) < 1e21 ? x.toFixed(rng.below(30)) : String(x)); break;
      case 3: out.push(x.toPrecision(1 + rng.below(21))); break;
      default: out.push(String(Math.fround(x))); break;
    }
  }
  return out;
}

const FIXED = [
  "", ".", "+", "-", "e", "e5", "E5", ".e5", "+.e1", "-.", ".5", "5.", "-.5", "+5.", "5.e3", ".5e-3", "1e", "1e+", "1e-", "1E+",
  "--1", "+-1", "-+1", "1e5.5", "1e5e5", "1ee5", "1.2.3", "0x10", "0x1p3", "1_000", "1,5", "1 5", "1e 5", "- 1",
  "inf", "-inf", "+INF", "Infinity", "-iNfInItY", "nan", "-nan", "+NaN", " nan ", "infx", "nanx", "infinite", "in", "na",
  "0", "-0", "+0", "0.0", "-0.0", "-0e999999999999", "0e-99999999999999999999", "000000000000000000000000000.000000000",
  "1e400", "-1e400", "1e-400", "1e308", "1.7976931348623157e308", "1.7976931348623158e308", "1.797693134862315807e308",
  "4.9e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-320", "1e99999999", "1e-99999999",
  "1e100000000", "1e-100000000", "1e2147483648", "1e-2147483649", "1e000000000000000000000022", "1e-00000022",
  `0.${"0".repeat(399)}1e400`, `0.${"0".repeat(99_999)}1e100000`, `0.${"0".repeat(99_999)}1e1000000`, `-0.${"0".repeat(99_998)}1e99999`,
  `${"1".repeat(100_000)}e-1000000`, `0.${"0".repeat(100_005)}e100000`, `1${"0".repeat(400)}e-400`, `${"9".repeat(30)}e-30`, `0.${"0".repeat(30)}${"9".repeat(30)}e30`,
  "9007199254740991", "9007199254740992", "9007199254740993", "9007199254740993e-5", "90071992547409930e-6",
  "18014398509481985", "1.000000059604644775390625", "1.0000000596046447753906250000001", "1.0000000596046447753906249999999",
  "3.4028235677973366e38", "3.4028235677973365e38", "3.40282356779733661637539395458142568448e38", "65520", "65519.99999999999999999",
  "65520.00000000000000001", "1.00048828125", "1.000488281250000001", "1.00390625", "1.00390625000000000000001",
  "1e22", "1e23", "1e-22", "1e-23", "123456789012345e22", "123456789012345e-22", "1234567890123456e-22",
  " 1.5", "1.5 ", "\t7\n", "\u00a01\u00a0", "\ufeff2", "\u20283\u2029", "\u3000" + "4", "\u00850",
];

function inputs(): string[] {
  const rng = new Rng(0x9a75e);
  const out: string[] = [...FIXED];
  for (const s of printed(rng, 60_000)) out.push(rng.below(10) === 0 ? mutate(rng, s) : s);
  for (let i = 0; i < 150_000; i++) out.push(mutate(rng, randomDecimal(rng)));
  for (let i = 0; i < 8_000; i++) {
    out.push(...ties(rng, 23, -126, 127)); // float32
    out.push(...ties(rng, 10, -14, 15)); // float16
    if (i % 4 === 0) out.push(...ties(rng, 7, -126, 127)); // bfloat16
  }
  return out;
}

const TARGETS: DTypeName[] = ["float32", "float16", "bfloat16", "float64", "float8e4m3fn"];
const GRAMMAR = 'a decimal number such as "1.5", "-2e-3", ".5", or inf / infinity / nan in any case';

test("string -> float: the scanner gives the grammar + Number() + exact-tie path's bits on ~300k strings", () => {
  const all = inputs();
  assert.ok(all.length > 300_000, `${all.length} strings`);
  for (const to of TARGETS) {
    const ref = new Float64Array(all.length);
    const good: string[] = [];
    const bad: string[] = [];
    for (const s of all) {
      if (reference(s, to, ref, good.length)) good.push(s);
      else bad.push(s);
    }
    const want = cast(Tensor.fromStorage(ref.subarray(0, good.length), "float64", [good.length]), to).bytes();
    const got = cast(Tensor.fromValues(good, "string"), to).bytes();
    const width = want.length / good.length;
    for (let i = 0; i < good.length; i++) {
      for (let b = 0; b < width; b++) {
        if (got[i * width + b] !== want[i * width + b]) {
          const hex = (u: Uint8Array): string => Array.from(u.subarray(i * width, (i + 1) * width), (v) => v.toString(16).padStart(2, "0")).join("");
          assert.fail(`${to}: ${JSON.stringify(good[i])} gave bytes ${hex(got)}, reference ${hex(want)} (float64 ${ref[i]})`);
        }
      }
    }
    // Every string outside the grammar: the same error, naming the element.
    assert.ok(bad.length > 5_000, `${to}: ${bad.length} malformed strings`);
    for (const s of new Set(bad)) {
      const shown = s.length > 40 ? `${JSON.stringify(s.slice(0, 40))}...` : JSON.stringify(s);
      assert.throws(() => cast(Tensor.fromValues(["1", s], "string"), to), (e: unknown) => {
        assert.ok(e instanceof TensorcastError && e.code === "PARSE_ERROR", `${to}: ${JSON.stringify(s)} threw ${String(e)}`);
        assert.equal(e.message, `element 1 (${shown}) does not parse as ${to}: expected ${GRAMMAR}`);
        return true;
      }, `${to}: ${JSON.stringify(s)} parsed`);
    }
  }
});

test("string -> float: every generated tie and its neighbours are in the mix, and parse to both sides", () => {
  // A guard on the generator: exact ties must take the exact path (so the test above sees them).
  const rng = new Rng(3);
  const [tie, above, below] = ties(rng, 23, -126, 127);
  const values = cast(Tensor.fromValues([tie, above, below], "string"), "float32").toValues() as number[];
  assert.ok(Math.abs(values[1]) >= Math.abs(values[2]) && values[1] !== values[2], `${tie} ${above} ${below} -> ${values.join(" ")}`);
  assert.ok(values[0] === values[1] || values[0] === values[2]);
});
