/**
 * quantizeModelFile streams (issue 26 point 4): a model whose weights are in a side file, or inline,
 * is quantized one weight at a time, and OUT equals byte for byte what quantizeModel makes of the
 * same model with every weight inline; IN's files are never OUT.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { quantizeModel, type QuantizeOptions } from "../../src/io/onnx/quantize/model.js";
import { quantizeModelFile } from "../../src/node/quantize/model-file.js";
import { assertSameBytes, golden } from "../io/quantize/golden.js";
import { PbMessage } from "../../src/io/onnx/precision/pb.js";
import { scratch } from "./helpers.js";
import { openTensorFile } from "../../src/node/io/reader.js";
import type { OnnxFileTensor } from "../../src/node/io/onnx.js";

/** Every initializer of a model file as read back: name, type, where (side file @ offset, or ""), bytes. */
async function readBack(path: string): Promise<[string, string, string, Uint8Array][]> {
  const f = await openTensorFile(path);
  try {
    const rows: [string, string, string, Uint8Array][] = [];
    for (const t of f.tensors) {
      const x = (t as OnnxFileTensor).external;
      rows.push([t.name, t.dtype.name, x ? `${x.location}@${x.offset}` : "", await t.read(0, t.size)]);
    }
    return rows;
  } finally {
    await f.close();
  }
}
import { streamedModel, writeStreamedModel } from "./quantize-model-streamed.js";

const CASES: QuantizeOptions[] = [
  { mode: "q4" }, { mode: "q4", symmetric: false, blockSize: 16 }, { mode: "q4f16" }, { mode: "bnb4" }, { mode: "bnb4", quantType: "fp4" },
  { mode: "int8" }, { mode: "uint8" }, { mode: "q8" }, { mode: "int8", perChannel: true }, { mode: "fp16" },
];

describe("quantizeModelFile: streamed, equal to quantizeModel in memory", () => {
  const dir = scratch();
  const input = writeStreamedModel(dir);
  const inline = streamedModel(undefined, true);

  for (const opts of CASES) {
    it(`${JSON.stringify(opts)}: the side-file model's OUT equals the inline model quantized in memory`, async () => {
      const out = join(dir, `out-${CASES.indexOf(opts)}.onnx`);
      const r = await quantizeModelFile(input, out, opts);
      const expected = quantizeModel(inline, opts);
      assert.equal(r.quantized, expected.quantized);
      assert.deepEqual(r.left, expected.left);
      assert.ok(r.quantized > 0);
      assertSameBytes(new Uint8Array(readFileSync(out)), expected.bytes, JSON.stringify(opts));
      assert.equal(r.outputBytes, expected.bytes.length);
      assert.equal(r.externalData, undefined);
    });
  }

  it("no spill or temporary file is left beside OUT", () => {
    assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".")), []);
  });

  it("with externalData, OUT's initializers of 1 KiB or more go to its own side file, read back equal to the inline result", async () => {
    for (const opts of [{ mode: "q4" }, { mode: "int8", perChannel: true }, { mode: "q4f16" }] as QuantizeOptions[]) {
      const out = join(dir, `ext-${opts.mode}.onnx`);
      const r = await quantizeModelFile(input, out, { ...opts, externalData: `ext-${opts.mode}.data`, force: true });
      assert.equal(r.externalData, join(dir, `ext-${opts.mode}.data`));
      const inline = join(dir, `inline-${opts.mode}.onnx`);
      writeFileSync(inline, quantizeModel(streamedModel(undefined, true), opts).bytes);
      const [a, b] = [await readBack(out), await readBack(inline)];
      assert.deepEqual(a.map(([name, type, , bytes]) => [name, type, bytes]), b.map(([name, type, , bytes]) => [name, type, bytes]));
      const external = a.filter(([, , where]) => where !== "");
      assert.ok(external.length > 0 && external.every(([, , where, bytes]) => where.startsWith(`ext-${opts.mode}.data@`) && bytes.length >= 1024), JSON.stringify(external.map((x) => x.slice(0, 3))));
    }
    await assert.rejects(quantizeModelFile(input, join(dir, "ext-x.onnx"), { mode: "q4", externalData: "model.data", force: true }), { code: "OUTPUT_IS_INPUT" });
    assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".")), []);
  });

  it("the model's own side file is never OUT", async () => {
    await assert.rejects(quantizeModelFile(input, join(dir, "model.data"), { mode: "q4", force: true }), { code: "OUTPUT_IS_INPUT" });
    assert.ok(existsSync(join(dir, "model.data")));
  });
});

/** `name` (gemm.onnx of test/fixtures/quantize) with every initializer's raw_data moved to the side file `gemm.data`. */
function gemmWithSideFile(dir: string, name = "gemm.onnx"): string {
  const model = PbMessage.parse(golden(name), "ModelProto");
  const g = model.sub(7, "GraphProto")!;
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const t of g.subs(5, "TensorProto")) {
    const raw = t.all(9)[0].data;
    t.fields = t.fields.filter((f) => f.no !== 9);
    const entry = (k: string, v: string): PbMessage => new PbMessage([], "StringStringEntryProto").addString(1, k).addString(2, v);
    t.addMessage(13, entry("location", "gemm.data")).addMessage(13, entry("offset", String(at))).addMessage(13, entry("length", String(raw.length))).addVarint(14, 1);
    parts.push(raw);
    at += raw.length;
  }
  const data = new Uint8Array(at);
  parts.reduce((p, c) => (data.set(c, p), p + c.length), 0);
  writeFileSync(join(dir, "gemm.data"), data);
  writeFileSync(join(dir, "gemm.onnx"), model.encode(1 << 16));
  return join(dir, "gemm.onnx");
}

describe("quantizeModelFile: Gemm rewritten while streaming (B transposed through the spill file)", () => {
  const dir = scratch();
  for (const [opts, file] of [[{ mode: "int8" }, "gemm_int8"], [{ mode: "uint8", perChannel: true }, "gemm_uint8_perchannel"]] as const) {
    it(`${JSON.stringify(opts)}: gemm.onnx inline and with a side file, OUT equal to onnxruntime's ${file}.onnx`, async () => {
      const inline = join(dir, "gemm-inline.onnx");
      writeFileSync(inline, golden("gemm.onnx"));
      for (const input of [inline, gemmWithSideFile(dir)]) {
        const out = join(dir, `${file}-out.onnx`);
        const r = await quantizeModelFile(input, out, { ...opts, force: true });
        assert.equal(r.quantized, 5);
        assertSameBytes(new Uint8Array(readFileSync(out)), golden(`${file}.onnx`), `${input}: ${file}`);
      }
      assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".")), []);
    });
  }
});

describe("quantizeModelFile: streamed, the kept initializers of 991 bytes or more get data_location DEFAULT as onnxruntime's reload leaves them", () => {
  const dir = scratch();
  for (const [opts, file] of [[{ mode: "int8" }, "gemm_big_int8"], [{ mode: "uint8", perChannel: true }, "gemm_big_uint8_perchannel"]] as const) {
    it(`${JSON.stringify(opts)}: gemm_big.onnx inline (Wb streamed, Wd transposed through the spill file) and with a side file, OUT equal to ${file}.onnx`, async () => {
      const inline = join(dir, "gemm-big-inline.onnx");
      writeFileSync(inline, golden("gemm_big.onnx"));
      for (const input of [inline, gemmWithSideFile(dir, "gemm_big.onnx")]) {
        const out = join(dir, `${file}-out.onnx`);
        const r = await quantizeModelFile(input, out, { ...opts, force: true });
        assert.equal(r.quantized, 1);
        assertSameBytes(new Uint8Array(readFileSync(out)), golden(`${file}.onnx`), `${input}: ${file}`);
      }
    });
  }
});

const url = (p: string): string => pathToFileURL(new URL(p, import.meta.url).pathname).href;

describe("quantizeModelFile: memory holds one weight, not the model", () => {
  // 16 weights of 16 MiB (256 MiB) in a side file. Streamed, q4 holds one weight and its codes at
  // a time: the child's resident memory grows by a few weights and the garbage the collector has
  // not taken yet (58-81 MiB on Node 20, 100-151 MiB on Node 26, whose collector runs later);
  // reading the model whole (as quantizeModelFile did before) grows it by the 256 MiB and more. So
  // the bound is on the growth, seven eighths of the model, not on the peak (Node 26 peaked at
  // 177-228 MiB, and once failed CI's old 200 MiB bound).
  it("q4 of a 256 MiB side-file model grows resident memory by less than seven eighths of the model", (t) => {
    const code = `
      const m = await import(${JSON.stringify(url("./quantize-model-streamed.js"))});
      const { quantizeModelFile } = await import(${JSON.stringify(url("../../src/node/quantize/model-file.js"))});
      const { writeFileSync, mkdtempSync, rmSync } = await import("node:fs");
      const { join } = await import("node:path");
      const { tmpdir } = await import("node:os");
      const dir = mkdtempSync(join(tmpdir(), "tensorcast-qmem-"));
      try {
        const K = 2048, N = 2048, L = 16;
        const chunk = new Float32Array(N * 64);
        const weights = [];
        const nodes = [];
        for (let l = 0; l < L; l++) {
          weights.push({ name: "w" + l, dims: [K, N], external: true, bytes: (write) => {
            for (let r = 0; r < K; r += 64) {
              for (let i = 0; i < chunk.length; i++) chunk[i] = Math.sin(i * 0.37 + r + l) * 0.05;
              write(new Uint8Array(chunk.buffer));
            }
          } });
          nodes.push(m.node("MatMul", [l === 0 ? "x" : "h" + (l - 1), "w" + l], ["h" + l], "mm" + l));
        }
        writeFileSync(join(dir, "big.onnx"), m.weightModel(nodes, weights, [], [], { dir, dataName: "big.data" }));
        const before = process.resourceUsage().maxRSS;
        const r = await quantizeModelFile(join(dir, "big.onnx"), join(dir, "big_q4.onnx"), { mode: "q4" });
        console.log(JSON.stringify({ quantized: r.quantized, bytesOut: r.outputBytes, before: before / 1024, peak: process.resourceUsage().maxRSS / 1024 }));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }`;
    const p = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8", timeout: 300_000 });
    assert.equal(p.status, 0, String(p.stderr).slice(-800));
    const r = JSON.parse(String(p.stdout)) as { quantized: number; bytesOut: number; before: number; peak: number };
    t.diagnostic(`peak resident ${r.peak.toFixed(0)} MiB, ${r.before.toFixed(0)} MiB before quantizing`);
    assert.equal(r.quantized, 16);
    assert.ok(r.peak - r.before < 224, `resident memory grew by ${(r.peak - r.before).toFixed(0)} MiB: peak ${r.peak.toFixed(0)} MiB, ${r.before.toFixed(0)} MiB before quantizing`);
  });
});
