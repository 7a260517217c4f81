/**
 * Llama 3's rope factors (rope_freqs.weight) against torch's, recorded by
 * test/fixtures/hf-gguf/make.py (rope-llama3.json): wherever torch's `base ** (i / dim)` is the
 * correctly rounded float32 power, every factor is torch's bit for bit; where torch's vectorized
 * pow is off in the last bit, the factors inside the smoothed band may differ, by a few ULP.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { llama3RopeFactors } from "../../../src/io/hf-gguf/rope.js";
import { HF_GGUF_DIR } from "./fixtures.js";

interface Config {
  dim: number;
  base: number;
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  original_context: number;
  factors: number[];
  powers: number[];
}

const { configs } = JSON.parse(readFileSync(`${HF_GGUF_DIR}rope-llama3.json`, "utf8")) as { configs: Config[] };
const bits = (a: Float32Array): number[] => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];

test("llama3 rope factors: torch's bits wherever its powers are correctly rounded; a few ULP inside the band elsewhere", () => {
  let exact = 0;
  let sameFactors = 0;
  let offPower = 0;
  let differing = 0;
  for (const c of configs) {
    const ours = bits(llama3RopeFactors({ base: c.base, dim: c.dim, factor: c.factor, lowFreqFactor: c.low_freq_factor, highFreqFactor: c.high_freq_factor, originalContext: c.original_context }));
    const where = `dim ${c.dim} base ${c.base} factor ${c.factor} low ${c.low_freq_factor} high ${c.high_freq_factor} ctx ${c.original_context}`;
    assert.equal(ours.length, c.factors.length, where);
    if (ours.every((o, k) => o === c.factors[k])) sameFactors++;
    const b = Math.fround(c.base);
    const powersRounded = c.powers.every((p, k) => {
      const mine = new Float32Array([Math.pow(b, Math.fround((2 * k) / c.dim))]);
      return new Uint32Array(mine.buffer)[0] === p;
    });
    if (powersRounded) {
      assert.deepEqual(ours, c.factors, where);
      exact++;
      continue;
    }
    offPower++;
    const factorBits = new Uint32Array(new Float32Array([c.factor]).buffer)[0];
    ours.forEach((o, k) => {
      const t = c.factors[k]!;
      if (o === t) return;
      differing++;
      // 1 and `factor` are never off: only a smoothed value, and by little
      assert.ok(o !== 0x3f800000 && o !== factorBits && t !== 0x3f800000 && t !== factorBits, `${where} [${k}]: ${o} vs ${t}`);
      assert.ok(Math.abs(o - t) <= 32, `${where} [${k}]: ${o} vs ${t} differ by ${Math.abs(o - t)} ULP`);
    });
  }
  // the grid's 150 (Llama 3.1's and 3.2's configurations among them) give torch's factors, and most random ones
  // (here 289 of 300; 190 with every power of torch's correctly rounded)
  assert.deepEqual(configs.slice(0, 150).filter((c) => !sameAt(c)).map((c) => `${c.dim} ${c.base}`), []);
  assert.ok(sameFactors >= 285 && exact >= 150, `${sameFactors} of ${configs.length} the same factors, ${exact} with torch's powers correctly rounded`);
  assert.ok(offPower > 0 && differing > 0, `${offPower} configurations where torch's power is off, ${differing} factors differing`);
});

function sameAt(c: Config): boolean {
  const ours = bits(llama3RopeFactors({ base: c.base, dim: c.dim, factor: c.factor, lowFreqFactor: c.low_freq_factor, highFreqFactor: c.high_freq_factor, originalContext: c.original_context }));
  return ours.every((o, k) => o === c.factors[k]);
}
