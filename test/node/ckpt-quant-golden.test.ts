/**
 * Checkpoint quantization against transformers 5.18's own output (test/fixtures/ckpt-quant, copied
 * from the golden files; make.py there is the recipe): every tensor bit for bit, both ways.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { TensorcastError, dtype } from "../../src/index.js";
import {
  fp8BlockDequantize, fp8BlockQuantize, fp8BlockRefusal, mxfp4Dequantize, mxfp4Quantize, mxfp4Refusal,
} from "../../src/kernels/quant/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { ROOT } from "./helpers.js";

const DIR = join(ROOT, "test", "fixtures", "ckpt-quant");

interface Loaded {
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly bytes: Uint8Array;
}

async function load(name: string): Promise<Map<string, Loaded>> {
  const file = await openTensorFile(join(DIR, name));
  const out = new Map<string, Loaded>();
  for (const t of file.tensors) out.set(t.name, { dtype: t.dtype.name, shape: t.shape, bytes: await t.read(0, t.size) });
  await file.close();
  return out;
}

function get(m: Map<string, Loaded>, name: string): Loaded {
  const t = m.get(name);
  assert.ok(t, `${name} in the golden file`);
  return t;
}

/** Equal bytes, reporting the first differing element instead of a megabyte diff. */
function sameBytes(actual: Uint8Array, expected: Uint8Array, what: string): void {
  assert.equal(actual.byteLength, expected.byteLength, `${what}: byte length`);
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) assert.fail(`${what}: byte ${i} is 0x${actual[i].toString(16)}, transformers wrote 0x${expected[i].toString(16)}`);
  }
}

const BF16 = dtype("bfloat16");
const LINEAR = ["a.weight", "b.weight", "c.weight", "d.weight"];

for (const [file, format, scaleType] of [["fp8.safetensors", "float32", "float32"], ["fp8_ue8m0.safetensors", "ue8m0", "float8e8m0"]] as const) {
  test(`fp8 (${format}): ${file} reproduced bit for bit, c.weight (300 rows) left as it is`, async () => {
    const src = await load("source.safetensors");
    const gold = await load(file);
    let quantized = 0;
    for (const name of LINEAR) {
      const s = get(src, name);
      const refusal = fp8BlockRefusal(s.shape, [128, 128]);
      if (refusal) {
        assert.equal(name, "c.weight");
        assert.match(refusal, /300, 256.*not a multiple of the 128x128 block/);
        assert.equal(get(gold, name).dtype, "bfloat16");
        assert.equal(gold.has("c.weight_scale_inv"), false);
        continue;
      }
      const q = fp8BlockQuantize(s.bytes, BF16, s.shape, [128, 128], format);
      const gw = get(gold, name);
      const gs = get(gold, name.replace(/weight$/, "weight_scale_inv"));
      assert.equal(gw.dtype, "float8e4m3fn");
      assert.equal(gs.dtype, scaleType);
      assert.equal(q.scaleType.name, scaleType);
      assert.deepEqual(q.scaleShape, gs.shape);
      sameBytes(q.weight, gw.bytes, `${name} weight`);
      sameBytes(q.scaleInv, gs.bytes, `${name} weight_scale_inv`);
      quantized++;
    }
    assert.equal(quantized, 3);
  });
}

test("fp8 back: fp8_dequantized.safetensors (transformers' Fp8Dequantize to bfloat16) bit for bit", async () => {
  const q = await load("fp8.safetensors");
  const gold = await load("fp8_dequantized.safetensors");
  for (const name of ["a.weight", "b.weight", "d.weight"]) {
    const w = get(q, name);
    const s = get(q, name.replace(/weight$/, "weight_scale_inv"));
    const out = fp8BlockDequantize(w.bytes, w.shape, s.bytes, dtype(s.dtype), s.shape, BF16);
    sameBytes(out, get(gold, name).bytes, name);
  }
  // What stayed bfloat16 comes back as it was.
  sameBytes(get(q, "c.weight").bytes, get(gold, "c.weight").bytes, "c.weight");
});

test("fp8-ue8m0 back: the e8m0 scales dequantize to the source's ue8m0 grid, and equal the float32-scale form of the same powers", async () => {
  const q = await load("fp8_ue8m0.safetensors");
  for (const name of ["a.weight", "b.weight", "d.weight"]) {
    const w = get(q, name);
    const s = get(q, name.replace(/weight$/, "weight_scale_inv"));
    const viaE8m0 = fp8BlockDequantize(w.bytes, w.shape, s.bytes, dtype("float8e8m0"), s.shape, BF16);
    const viaUint8 = fp8BlockDequantize(w.bytes, w.shape, s.bytes, dtype("uint8"), s.shape, BF16);
    const f32 = new Float32Array(s.bytes.length).map((_, i) => 2 ** (s.bytes[i] - 127));
    const viaF32 = fp8BlockDequantize(w.bytes, w.shape, new Uint8Array(f32.buffer), dtype("float32"), s.shape, BF16);
    sameBytes(viaE8m0, viaF32, `${name} e8m0 vs float32`);
    sameBytes(viaUint8, viaF32, `${name} uint8 vs float32`);
  }
});

test("mxfp4: mxfp4.safetensors (OCP MX v1.0 in gpt-oss' layout) bit for bit", async () => {
  const src = await load("source.safetensors");
  const gold = await load("mxfp4.safetensors");
  for (const name of ["experts.gate_up_proj", "experts.down_proj"]) {
    const s = get(src, name);
    assert.equal(mxfp4Refusal(s.shape), undefined);
    const q = mxfp4Quantize(s.bytes, BF16, s.shape);
    const gb = get(gold, `${name}_blocks`);
    const gs = get(gold, `${name}_scales`);
    assert.deepEqual(q.blocksShape, gb.shape);
    assert.deepEqual(q.scalesShape, gs.shape);
    sameBytes(q.blocks, gb.bytes, `${name}_blocks`);
    sameBytes(q.scales, gs.bytes, `${name}_scales`);
  }
});

test("mxfp4 back: mxfp4_dequantized.safetensors (convert_moe_packed_tensors, bfloat16 [E, in, out]) bit for bit", async () => {
  const q = await load("mxfp4.safetensors");
  const gold = await load("mxfp4_dequantized.safetensors");
  for (const name of ["experts.gate_up_proj", "experts.down_proj"]) {
    const b = get(q, `${name}_blocks`);
    const s = get(q, `${name}_scales`);
    const out = mxfp4Dequantize(b.bytes, b.shape, s.bytes, s.shape, BF16);
    const g = get(gold, name);
    assert.deepEqual(out.shape, g.shape);
    sameBytes(out.data, g.bytes, name);
  }
});

test("refusals: not 2-D / not a block multiple for fp8, in not a multiple of 32 for mxfp4, bad scales are INVALID_DATA", () => {
  assert.match(fp8BlockRefusal([256], [128, 128]) ?? "", /not 2-D/);
  assert.match(mxfp4Refusal([2, 48, 64]) ?? "", /input dimension 48 is not a multiple of 32/);
  assert.throws(() => fp8BlockQuantize(new Uint8Array(300 * 256 * 2), BF16, [300, 256]), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_SHAPE");
  const w = new Uint8Array(128 * 128).fill(0x38);
  for (const bad of [NaN, Infinity, 0, -1, -0]) {
    const s = new Uint8Array(new Float32Array([bad]).buffer);
    assert.throws(() => fp8BlockDequantize(w, [128, 128], s, dtype("float32"), [1, 1], BF16),
      (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /scale 0 is/.test(e.message), String(bad));
  }
  assert.throws(() => fp8BlockDequantize(w, [128, 128], new Uint8Array([0xff]), dtype("float8e8m0"), [1, 1], BF16),
    (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA");
  assert.throws(() => mxfp4Dequantize(new Uint8Array(16), [1, 1, 1, 16], new Uint8Array([0xff]), [1, 1, 1], BF16),
    (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA");
});

function f32Bytes(v: readonly number[]): Uint8Array {
  return new Uint8Array(new Float32Array(v).buffer);
}

test("fp8: the product is rounded to float32 before the cast (a product just under the tie 46 goes to 48 as torch's does)", () => {
  // One 128x128 float32 block: amax 1 (scale fround(fround(1/1) * 448) = 448) and w with w * 448 just
  // under 46 exactly but 46 in float32; 46 is the tie between 44 (0x63) and 48 (0x64).
  const w = Math.fround(46 / 448);
  let x = w;
  // step w down by float32 ulps until the exact product is below 46 while its float32 rounding is 46
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  f[0] = w;
  for (let i = 0; i < 4 && !(x * 448 < 46 && Math.fround(x * 448) === 46); i++) {
    u[0]--;
    x = f[0];
  }
  assert.ok(x * 448 < 46 && Math.fround(x * 448) === 46, "a float32 w with the wanted product");
  const values = new Array<number>(128 * 128).fill(0);
  values[0] = 1;
  values[1] = x;
  values[2] = -x;
  const q = fp8BlockQuantize(f32Bytes(values), dtype("float32"), [128, 128]);
  assert.equal(q.weight[0], 0x7e); // 448
  assert.equal(q.weight[1], 0x64); // 48: the float32 tie to even
  assert.equal(q.weight[2], 0xe4);
  assert.deepEqual([...new Float32Array(q.scaleInv.slice().buffer)], [Math.fround(1 / 448)]);
});

test("fp8: an all-zero block has scale 1 (weight_scale_inv 1, ue8m0 code 127) and zero codes; a NaN block scale 1 too", () => {
  const zeros = f32Bytes(new Array<number>(128 * 256).fill(0).map((_, i) => (i % 256 < 128 ? 0 : 0.5)));
  const q = fp8BlockQuantize(zeros, dtype("float32"), [128, 256]);
  assert.deepEqual([...new Float32Array(q.scaleInv.slice().buffer)], [1, Math.fround(1 / 896)]);
  assert.equal(q.weight[0], 0);
  assert.equal(q.weight[128], 0x7e);
  const ue = fp8BlockQuantize(zeros, dtype("float32"), [128, 256], [128, 128], "ue8m0");
  assert.deepEqual([...ue.scaleInv], [127, 127 - 9]); // 1; 1 / 896 -> 2^ceil(log2(1 / 896)) = 2^-9
  const nan = new Array<number>(128 * 128).fill(0.25);
  nan[5] = NaN;
  const nanBytes = f32Bytes(nan);
  new Uint32Array(nanBytes.buffer)[6] = 0xffc00000; // a negative NaN: its sign is kept, as torch's cast keeps it
  const qn = fp8BlockQuantize(nanBytes, dtype("float32"), [128, 128]);
  assert.deepEqual([...new Float32Array(qn.scaleInv.slice().buffer)], [1]);
  assert.equal(qn.weight[0], 0x28); // 0.25 * 1
  assert.equal(qn.weight[5], 0x7f);
  assert.equal(qn.weight[6], 0xff);
});

test("mxfp4: -0 keeps its sign (code 8), an all-zero block has exponent code 0, a NaN block 0xFF", () => {
  const values = new Array<number>(96).fill(0);
  // shape [1, 96, 1]: one output row, three blocks of 32 along `in`
  values[0] = -0;
  values[1] = 1;
  values[32] = NaN;
  const q = mxfp4Quantize(f32Bytes(values), dtype("float32"), [1, 96, 1]);
  assert.deepEqual([...q.scales], [127 - 2, 0xff, 0]);
  assert.equal(q.blocks[0], 0x8 | (0x6 << 4)); // -0, then 1 / 2^-2 = 4 (code 6)
});
