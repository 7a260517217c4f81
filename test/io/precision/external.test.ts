/**
 * Whole-model conversion of models whose initializers live in side files (issue 15, part 3):
 * convertModelFile streams their data (src/node/convert/model-precision.ts). The MLP and the
 * transformer block of models.ts, with every initializer moved to a side file, are converted to
 * float16 (graph), float16 with float32 io, and float8e4m3fn weights, written inline and with a
 * side file of their own. Each result must be exactly the model the in-memory pass makes from the
 * inline original (so its converted initializers equal a plain Cast, as precision.test.ts checks
 * there), report the same, pass onnx's checker and run in onnxruntime-node within the model's
 * tolerance. Side files that escape the folder, are too short or fail their checksum are refused.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "../../support/python.js";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { decodeModel } from "../../../src/io/onnx/model.js";
import { convertModelPrecision, type PrecisionOptions } from "../../../src/io/onnx/precision/model.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { castWeights } from "../../../src/io/onnx/precision/tensors.js";
import { WireWriter } from "../../../src/io/onnx/wire-writer.js";
import { dtype } from "../../../src/dtype/table.js";
import { Tensor } from "../../../src/tensor.js";
import { encodeModel } from "../../../src/io/onnx/encode.js";
import { convertModelFile, type ModelConvertOptions, type ModelConvertReport } from "../../../src/node/convert/model-precision.js";
import { openTensorFile } from "../../../src/node/io/reader.js";
import { Interrupted } from "../../../src/node/convert/schedule.js";
import type { OnnxFileTensor } from "../../../src/node/io/onnx.js";
import { externalTensor } from "../../node/external-model.js";
import { cli, rejectsCode, scratch } from "../../node/helpers.js";
import { mlp, transformer, type TestModel } from "./models.js";
import { runInChild, type RunJob, type RunResult } from "./ort-run.js";

const root = scratch();

/** How a test side file's entries are written; a hook lets a test spoil one. */
interface SideSpec {
  location?: string;
  /** Extra bytes claimed past each tensor's real length. */
  overrun?: number;
  checksum?: "right" | "wrong";
}

/**
 * `m` with every float32 initializer's data in `data.bin` beside it (at 64-byte offsets, a gap of junk
 * before each so an offset that is ignored reads the wrong bytes), each with location, offset and
 * length, the way onnx's convert_model_to_external_data writes them.
 */
function externalize(m: TestModel, dir: string, spec: SideSpec = {}): string {
  mkdirSync(dir, { recursive: true });
  const decoded = decodeModel(m.bytes);
  // float32 only: onnxruntime cannot infer shapes from int64 inputs (Unsqueeze's axes) kept
  // outside. Scalars stay inline, so the pass converts some tensors itself between streamed ones.
  const inits = decoded.graph.initializers.filter(isStreamed);
  const parts: Uint8Array[] = [];
  const refs: [number, number][] = [];
  let size = 0;
  for (const t of inits) {
    const junk = new Uint8Array(64 - (size % 64) + 64).fill(0xa5);
    parts.push(junk);
    size += junk.length;
    const bytes = t.tensor.bytes();
    refs.push([size, bytes.length]);
    parts.push(bytes);
    size += bytes.length;
  }
  const side = new Uint8Array(size);
  parts.reduce((at, p) => (side.set(p, at), at + p.length), 0);
  writeFileSync(join(dir, "data.bin"), side);
  const sha1 = createHash("sha1").update(side).digest("hex");
  const messages = inits.map((t, i) => {
    const entries: [string, string][] = [
      ["location", spec.location ?? "data.bin"], ["offset", String(refs[i][0])], ["length", String(refs[i][1] + (spec.overrun ?? 0))],
    ];
    if (spec.checksum) entries.push(["checksum", spec.checksum === "right" ? sha1 : "0".repeat(40)]);
    return externalTensor(t.name, t.tensor.shape, t.tensor.dtype.onnx, entries);
  });
  // Each initializer replaced where it is, so the fields keep their order.
  const model = PbMessage.parse(m.bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  let k = 0;
  for (const f of graph.all(5)) {
    const t = graph.message(f, "TensorProto");
    if (t.int(2) !== 1 || t.varints(1).length === 0) continue;
    f.msg = undefined;
    f.data = messages[k++];
  }
  const path = join(dir, "model.onnx");
  writeFileSync(path, model.encode());
  return path;
}

/** The initializers externalize moves out: float32 ones that are not scalars. */
function isStreamed(t: { tensor: Tensor }): boolean {
  return t.tensor.dtype.name === "float32" && t.tensor.shape.length > 0;
}

type Variant = "float16" | "float16-keep-io" | "float8e4m3fn";
const VARIANTS: Record<Variant, PrecisionOptions> = {
  float16: { to: "float16" },
  "float16-keep-io": { to: "float16", keepIoTypes: true },
  float8e4m3fn: { to: "float8e4m3fn" },
};

interface Case {
  model: TestModel;
  variant: Variant;
  output: "inline" | "external";
  path: string;
  report: ModelConvertReport;
}

const models = [mlp(), transformer(false)];
const cases: Case[] = [];
const inputs = new Map<TestModel, string>();

/** The in-memory pass's result for the inline original: what the streamed conversion must write. */
function expected(m: TestModel, v: Variant): ReturnType<typeof convertModelPrecision> {
  return convertModelPrecision(m.bytes, VARIANTS[v]);
}

async function convertAll(): Promise<void> {
  for (const m of models) {
    const input = externalize(m, join(root, m.name));
    inputs.set(m, input);
    for (const variant of Object.keys(VARIANTS) as Variant[]) {
      for (const output of ["inline", "external"] as const) {
        const dir = join(root, `${m.name}-${variant}-${output}`);
        mkdirSync(dir);
        const path = join(dir, "out.onnx");
        const opts: ModelConvertOptions = { ...VARIANTS[variant], ...(output === "external" ? { externalData: "out.onnx.data", externalThreshold: 0 } : {}) };
        cases.push({ model: m, variant, output, path, report: await convertModelFile(input, path, opts) });
      }
    }
  }
}

const ready = convertAll();
after(async () => {
  await ready.catch(() => undefined);
});

const toleranceOf = (m: TestModel, v: Variant): number => (v === "float8e4m3fn" ? m.tolerance.weights8 : m.tolerance.float16);

describe("a model with external data, converted as a whole, streamed", () => {
  it("writes what the in-memory pass writes for the inline model: inline byte for byte, external the same initializers", async () => {
    await ready;
    for (const c of cases) {
      const label = `${c.model.name} -> ${c.variant} (${c.output})`;
      const want = expected(c.model, c.variant);
      const files = readdirSync(join(c.path, "..")).sort();
      if (c.output === "inline") {
        assert.deepEqual(files, ["out.onnx"], label);
        assert.ok(Buffer.from(readFileSync(c.path)).equals(want.bytes), `${label}: differs from the in-memory pass's model`);
        assert.equal(c.report.externalData, undefined);
        continue;
      }
      assert.deepEqual(files, ["out.onnx", "out.onnx.data"], label);
      // Same graph; each initializer read back through its side file equals the in-memory one.
      assert.ok(Buffer.from(withoutInitializers(readFileSync(c.path))).equals(withoutInitializers(want.bytes)), `${label}: the graph differs`);
      const mem = decodeModel(want.bytes);
      const floats = new Set(decodeModel(c.model.bytes).graph.initializers.filter(isStreamed).map((t) => t.name));
      const back = await openTensorFile(c.path);
      try {
        assert.deepEqual(back.tensors.map((t) => t.name), mem.graph.initializers.map((t) => t.name), label);
        for (const [i, t] of back.tensors.entries()) {
          const ref = mem.graph.initializers[i].tensor;
          assert.equal(t.dtype, ref.dtype, `${label}: ${t.name}`);
          assert.deepEqual(await t.read(0, t.size), ref.bytes(), `${label}: ${t.name}`);
          // Those the input kept outside (its float32 ones) are streamed into the side file; the others stay inline.
          const streamed = floats.has(t.name.replace(/__float8e4m3fn$/, ""));
          assert.equal((t as OnnxFileTensor).external?.location, streamed ? "out.onnx.data" : undefined, `${label}: ${t.name}`);
        }
      } finally {
        await back.close();
      }
      assert.equal(c.report.externalData?.location, "out.onnx.data");
      assert.equal(c.report.externalData?.tensors, floats.size);
    }
  });

  it("converted initializers equal a plain Cast of the originals, bit for bit", async () => {
    await ready;
    for (const c of cases) {
      const to = dtype(VARIANTS[c.variant].to);
      const originals = new Map(decodeModel(c.model.bytes).graph.initializers.map((t) => [t.name, t.tensor]));
      const back = await openTensorFile(c.path);
      let checked = 0;
      try {
        for (const t of back.tensors) {
          const name = t.name.endsWith(`__${to.name}`) ? t.name.slice(0, -(to.name.length + 2)) : t.name;
          const source: Tensor | undefined = originals.get(name);
          if (!source || source.dtype.name !== "float32" || t.dtype !== to) continue;
          assert.deepEqual(await t.read(0, t.size), castWeights(source, { to, saturate: true }).bytes(), `${c.model.name} ${c.variant}: ${t.name}`);
          checked++;
        }
      } finally {
        await back.close();
      }
      assert.ok(checked >= 3, `${c.model.name} ${c.variant}: only ${checked} initializers checked`);
    }
  });

  it("reports what the in-memory conversion of the inline model reports", async () => {
    await ready;
    for (const m of models) {
      const inline = join(root, `${m.name}-inline.onnx`);
      writeFileSync(inline, m.bytes);
      for (const variant of Object.keys(VARIANTS) as Variant[]) {
        const plain = await convertModelFile(inline, join(root, `${m.name}-${variant}-plain.onnx`), VARIANTS[variant]);
        const c = cases.find((x) => x.model === m && x.variant === variant && x.output === "inline")!;
        const strip = (r: ModelConvertReport) => ({ ...r, input: "", output: "", bytesIn: 0, seconds: 0, workers: 0 });
        assert.deepEqual(strip(c.report), strip(plain), `${m.name} ${variant}`);
        assert.ok(c.report.tensors.length >= 3 && c.report.tensors.every((t) => t.stats?.count === t.shape.reduce((a, b) => a * b, 1)), `${m.name} ${variant}`);
      }
    }
  });

  it("runs in onnxruntime-node within each model's tolerance", async () => {
    await ready;
    const feedsOf = (c: Case) => c.model.feeds.map((f) => ({ ...f, type: f.type === "float32" && c.variant === "float16" ? ("float16" as const) : f.type }));
    const jobs: RunJob[] = [
      ...models.map((m) => ({ path: inputs.get(m)!, feeds: m.feeds, byPath: true })),
      ...cases.map((c) => ({ path: c.path, feeds: feedsOf(c), byPath: true })),
    ];
    const results: RunResult[] = runInChild(jobs);
    for (const [i, c] of cases.entries()) {
      const base = results[models.indexOf(c.model)];
      const got = results[models.length + i];
      const label = `${c.model.name} -> ${c.variant} (${c.output})`;
      assert.ok(base.ok, `${c.model.name} with external data failed: ${!base.ok ? base.error : ""}`);
      assert.ok(got.ok, `${label} failed: ${!got.ok ? got.error : ""}`);
      const tol = toleranceOf(c.model, c.variant);
      for (const [name, want] of Object.entries(base.outputs)) {
        const out: { dims: number[]; values: number[] } = got.outputs[name];
        assert.deepEqual(out.dims, want.dims, label);
        let worst = 0;
        for (let k = 0; k < want.values.length; k++) {
          const err = Math.abs(out.values[k] - want.values[k]) / Math.max(1, Math.abs(want.values[k]));
          if (!(err <= worst)) worst = err;
        }
        assert.ok(worst <= tol, `${label}: ${name}'s largest error ${worst} exceeds ${tol}`);
      }
    }
  });

  it("passes onnx.checker.check_model(path) (onnx 1.12 predates float8's IR 9: those stop at the IR version)", { skip: onnxMissing() }, async () => {
    await ready;
    const script = [
      "import sys, onnx",
      "for p in sys.argv[1:]:",
      "    try:",
      "        onnx.checker.check_model(p)",
      "        print('ok')",
      "    except Exception as e:",
      "        print('fail ' + str(e).replace(chr(10), ' ')[:300])",
    ].join("\n");
    const r = spawnSync(PYTHON, ["-c", script, ...cases.map((c) => c.path)], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    for (const [i, c] of cases.entries()) {
      const label = `${c.model.name} -> ${c.variant} (${c.output})`;
      if (c.variant === "float8e4m3fn") {
        // onnx 1.12 knows IR 8 and opset 17; float8 needs IR 9 and opset 19, so it stops at the IR version.
        assert.match(lines[i], /^(ok|fail Your model ir_version is higher than the checker's\.?)$/, label);
        continue;
      }
      assert.equal(lines[i], "ok", label);
    }
  });

  it("the CLI writes external data for a whole model with --external-data, and --inline inlines it", async () => {
    await ready;
    const m = models[0];
    const input = inputs.get(m)!;
    const dir = join(root, "cli");
    mkdirSync(dir);
    const out = join(dir, "m.onnx");
    const r2 = await cli(["convert", input, "--to", "float16", "--keep-io-types", "--external-data", "m.bin", "--json", "-o", out]);
    assert.equal(r2.code, 0, r2.err);
    const report = JSON.parse(r2.out) as ModelConvertReport;
    assert.equal(report.externalData?.location, "m.bin");
    // The MLP's tensors are under 1 KiB: below the side file's threshold, so they stay inline.
    assert.equal(report.externalData?.tensors, 0);
    const inl = join(dir, "i.onnx");
    const r3 = await cli(["convert", input, "--to", "float8e4m3fn", "--inline", "-o", inl]);
    assert.equal(r3.code, 0, r3.err);
    assert.ok(Buffer.from(readFileSync(inl)).equals(expected(m, "float8e4m3fn").bytes));
    // Never the input's own side file, even with force.
    const again = join(root, m.name, "again.onnx");
    await rejectsCode(
      convertModelFile(input, again, { to: "float16", externalData: "data.bin", force: true }), "OUTPUT_IS_INPUT",
      /data\.bin: the side file to write is .*model\.onnx's own external data file data\.bin; tensorcast never overwrites its input/,
    );
    assert.ok(!existsSync(again));
  });
});

/** A ModelProto with its main graph's initializers left out: the rest of the model, to compare. */
function withoutInitializers(bytes: Uint8Array): Uint8Array {
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  graph.remove(5);
  return model.encode();
}

it("float16 overflow in a streamed weight is clamped to 65504 and counted as saturated, as in memory", async () => {
  const values = Array.from({ length: 32 * 32 }, (_, i) => Math.sin(i) * 0.5);
  values[7] = 70000;
  values[8] = -1e6;
  const bytes = encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: 13 }],
    graph: {
      name: "big", nodes: [{ name: "mm", opType: "MatMul", domain: "", inputs: ["x", "w"], outputs: ["y"], attributes: [] }],
      initializers: [{ name: "w", tensor: Tensor.fromValues(values, "float32", [32, 32]) }],
      inputs: [{ name: "x", elemType: 1, shape: [1, 32] }], outputs: [{ name: "y", elemType: 1, shape: [1, 32] }],
    },
  });
  const m: TestModel = { name: "overflow", bytes, feeds: [], tolerance: { float16: 0, bfloat16: 0, weights8: 0 } };
  const input = externalize(m, join(root, "overflow"));
  const r = await convertModelFile(input, join(root, "overflow", "out.onnx"), { to: "float16" });
  assert.deepEqual([r.tensors[0].stats?.saturated, r.tensors[0].stats?.outOfRange], [2, 2]);
  const w = decodeModel(readFileSync(join(root, "overflow", "out.onnx"))).graph.initializers[0].tensor;
  assert.deepEqual([(w.data as Uint16Array)[7], (w.data as Uint16Array)[8]], [0x7bff, 0xfbff]);
  assert.ok(Buffer.from(readFileSync(join(root, "overflow", "out.onnx"))).equals(convertModelPrecision(bytes, { to: "float16" }).bytes));
});

it("a stop while the output is written leaves neither file nor temporary", async () => {
  const dir = join(root, "stopped");
  const input = externalize(mlp(), dir);
  const stop = new AbortController();
  let chunks = 0;
  // Stopped once the first streamed chunk is written: both temporaries exist by then.
  const onProgress = (): void => {
    chunks++;
    stop.abort();
  };
  await assert.rejects(convertModelFile(input, join(dir, "out.onnx"), { to: "float16", externalData: "out.onnx.data", externalThreshold: 0, signal: stop.signal, onProgress }), Interrupted);
  assert.ok(chunks >= 1);
  assert.deepEqual(readdirSync(dir).sort(), ["data.bin", "model.onnx"]);
});

describe("a model whose side file is hostile is refused before anything is written", () => {
  const m = mlp();
  const cases: [string, SideSpec, string, RegExp][] = [
    ["a location outside the folder", { location: "../data.bin" }, "INVALID_DATA", /external data location "\.\.\/data\.bin" has a "\.\." component; it must name a file inside the model's folder/],
    ["an absolute location", { location: "/etc/passwd" }, "INVALID_DATA", /is an absolute path/],
    ["offset + length beyond the file", { overrun: 1 << 20 }, "INVALID_DATA", /its external data is bytes \[\d+, \d+\) of data\.bin, which has \d+ bytes/],
    ["a checksum that does not match", { checksum: "wrong" }, "INVALID_DATA", /has the SHA-1 digest [0-9a-f]{40}, not the checksum 0{40}/],
  ];
  for (const [what, spec, code, pattern] of cases) {
    it(what, async () => {
      const dir = join(root, `hostile-${what.replace(/\W+/g, "-")}`);
      const input = externalize(m, dir, spec);
      const out = join(dir, "out.onnx");
      await rejectsCode(convertModelFile(input, out, { to: "float16" }), code, pattern);
      assert.deepEqual(readdirSync(dir).sort(), ["data.bin", "model.onnx"], "nothing written");
    });
  }

  it("external data outside the main graph's initializers (a Constant's value) is refused, not copied", async () => {
    const dir = join(root, "constant-external");
    mkdirSync(dir);
    writeFileSync(join(dir, "c.bin"), new Uint8Array(16));
    const t = externalTensor("", [4], 1, [["location", "c.bin"], ["length", "16"]]);
    const node = new WireWriter().stringField(2, "y").stringField(3, "k").stringField(4, "Constant");
    node.fork(5).stringField(1, "value").uint32Field(20, 4).bytesField(5, t).join();
    const model = PbMessage.parse(encodeModel({
      irVersion: 8, opsetImports: [{ domain: "", version: 13 }],
      graph: { name: "g", nodes: [], initializers: [], inputs: [], outputs: [{ name: "y", elemType: 1, shape: [4] }] },
    }), "ModelProto");
    model.sub(7, "GraphProto")!.fields.unshift({ no: 1, wire: 2, data: node.finish().slice() });
    const input = join(dir, "model.onnx");
    writeFileSync(input, model.encode());
    await rejectsCode(convertModelFile(input, join(dir, "out.onnx"), { to: "float16" }), "NOT_IMPLEMENTED", /attribute "value" of node "k" has external data; tensorcast reads external data for the main graph's initializers only/);
    assert.deepEqual(readdirSync(dir).sort(), ["c.bin", "model.onnx"]);
  });

  it("a right checksum is accepted", async () => {
    const dir = join(root, "checksum-right");
    const input = externalize(m, dir, { checksum: "right" });
    const r = await convertModelFile(input, join(dir, "out.onnx"), { to: "float16" });
    assert.ok(Buffer.from(readFileSync(join(dir, "out.onnx"))).equals(expected(m, "float16").bytes));
    assert.equal(r.tensors.length, 4);
  });
});
