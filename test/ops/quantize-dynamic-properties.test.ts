/**
 * DynamicQuantizeLinear-11 against the exact oracle of test/support/quant-oracle.ts (rational
 * arithmetic, each float32 step of the function body rounded once): random float32 tensors that
 * mix ties, both signs, ranges that overflow float32 when subtracted, subnormals, +/-Inf, NaN,
 * all-zero and all-NaN tensors. The scale, the zero point and every code must match bit for bit.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { Tensor, dtype, dynamicQuantizeLinear } from "../../src/index.js";
import { dynamicQuantizeOracle } from "../support/quant-oracle.js";
import { Rng } from "../support/rng.js";
import { property } from "../support/suite.js";

const RUNS = property(300, 20261127);
const F32 = dtype("float32");
const U8 = dtype("uint8");
const SPECIALS = [0, -0, 1, -1, 0.5, -0.5, 255, -255, 2 ** -149, -(2 ** -149), 2 ** -126, 3.4028234663852886e38, -3.4028234663852886e38, Infinity, -Infinity, NaN];

function randomValues(rng: Rng): number[] {
  const n = rng.below(5) === 0 ? rng.below(3) : 1 + rng.below(200);
  const style = rng.below(6);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const pick = rng.below(8);
    // A range of exactly 255 whose low end is -(k + 1/2): the zero point is a tie.
    if (style === 5 && i < 2) out.push(i === 0 ? -(rng.below(255) + 0.5) : 0);
    else if (style === 5 && i === 2) out.push(255 + (out[0] as number));
    else if (style === 5) out.push((out[0] as number) + rng.below(511) / 2);
    else if (style === 0) out.push(0);
    else if (style === 1) out.push(rng.below(2) === 0 ? NaN : 0);
    else if (pick === 0) out.push(SPECIALS[rng.below(SPECIALS.length)]);
    else if (pick === 1) out.push(new Float32Array(new Uint32Array([rng.u32()]).buffer)[0]);
    // Small integers and halves: codes land on ties of x / scale.
    else if (pick === 2) out.push((rng.below(1021) - 510) / 2);
    else out.push(Math.fround((rng.u32() / 2 ** 32 - (style === 2 ? 0 : 0.5)) * 2 ** (rng.below(60) - 30)));
  }
  return out;
}

function check(values: number[]): void {
  const x = Tensor.fromStorage(new Float32Array(values), "float32", [values.length]);
  const got = dynamicQuantizeLinear(x);
  const want = dynamicQuantizeOracle(Array.from(x.data as Float32Array), F32, U8);
  const what = `x [${values.slice(0, 12).join(", ")}${values.length > 12 ? ", ..." : ""}] (${values.length} values)`;
  assert.ok(Object.is((got.scale.data as Float32Array)[0], want.scale) || (Number.isNaN(want.scale) && Number.isNaN((got.scale.data as Float32Array)[0])), `${what}: scale ${(got.scale.data as Float32Array)[0]}, oracle ${want.scale}`);
  assert.equal((got.zeroPoint.data as Uint8Array)[0], want.zeroPoint, `${what}: zero point`);
  assert.deepEqual(Array.from(got.y.data as Uint8Array), want.y, `${what}: codes`);
}

test("DynamicQuantizeLinear-11 equals the rational oracle (scale, zero point, every code; ties, overflowing ranges, Inf, NaN, empty)", () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 0x7fffffff }), (seed) => check(randomValues(new Rng(seed)))), RUNS);
});

test("DynamicQuantizeLinear-11's documented edges against the oracle", () => {
  for (const values of [[], [0, 0], [NaN, NaN], [-Infinity, 1], [Infinity, -1], [3.4028234663852886e38, -3.4028234663852886e38], [2 ** -149], [-(2 ** -149), 0], [1, 2, 3], [-1, 1], [0.5, -0.5, 127.5], [-0.5, 254.5], [-2.5, 252.5], [-127.5, 127.5]]) {
    check(values);
  }
});
