/**
 * ONNX external data written (issue 15, part 3): `convert ... --external-data FILE` writes every
 * initializer of 1024 bytes or more to a side file at aligned offsets (64 bytes, 4096 from 1 MiB)
 * and refers to it from the model; tensorcast, onnx (python, when installed) and onnxruntime-node
 * read the pair back; the side file is renamed into place before the model; a side file that is
 * the model, the input or one of the input's own side files, or lies outside the output's folder,
 * is refused before anything is written.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "../support/python.js";
import { existsSync, promises as fsp, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-node";
import { cast, Tensor } from "../../src/index.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { convertFile, openTensorFile } from "../../src/node/index.js";
import type { OnnxFileTensor } from "../../src/node/io/onnx.js";
import { modelOf } from "../support/onnx-model.js";
import { ortData } from "../support/ort.js";
import { cli, randomFloat32, rejectsCode, ROOT, scratch } from "./helpers.js";

const root = scratch();

// W: 2048 bytes (1024 as float16: at the threshold, so external); B: 128 bytes (inline);
// S: 1200 bytes; V: 1 MiB (page-aligned).
const W = Tensor.fromBytes(randomFloat32(16 * 32, 1, 0.5), "float32", [16, 32]);
const B = Tensor.fromBytes(randomFloat32(32, 2), "float32", [32]);
const S = Tensor.fromBytes(randomFloat32(300, 3), "float32", [300]);
const V = Tensor.fromBytes(randomFloat32(512 * 512, 4), "float32", [512, 512]);
const X = Tensor.fromBytes(randomFloat32(16, 5), "float32", [1, 16]);

/** Y = MatMul(X, Cast(W, FLOAT)) + B; Z = Identity(V); T = Identity(S). */
function writeInput(dir: string): string {
  const model = modelOf({
    inputs: [{ name: "X", elemType: 1, shape: [1, 16] }],
    outputs: [{ name: "Y", elemType: 1, shape: [1, 32] }, { name: "Z", elemType: 1, shape: [512, 512] }, { name: "T", elemType: 1, shape: [300] }],
    // IR 8, opset 17: what onnx 1.12 (Debian's python3-onnx) checks.
    opset: 17, irVersion: 8,
    nodes: [
      { opType: "Cast", inputs: ["W"], outputs: ["Wf"], attributes: [{ name: "to", type: "INT", i: 1 }] },
      { opType: "MatMul", inputs: ["X", "Wf"], outputs: ["XW"] },
      { opType: "Add", inputs: ["XW", "B"], outputs: ["Y"] },
      { opType: "Identity", inputs: ["V"], outputs: ["Z"] },
      { opType: "Identity", inputs: ["S"], outputs: ["T"] },
    ],
  });
  model.graph.initializers.push({ name: "W", tensor: W }, { name: "B", tensor: B }, { name: "S", tensor: S }, { name: "V", tensor: V });
  const path = join(dir, "in.onnx");
  writeFileSync(path, encodeModel(model));
  return path;
}

async function folder(name: string): Promise<string> {
  const dir = join(root, name);
  await fsp.mkdir(dir, { recursive: true });
  return dir;
}

async function run(path: string): Promise<{ Y: Uint8Array; Z: Uint8Array; T: Uint8Array }> {
  const session = await ort.InferenceSession.create(path);
  try {
    const out = await session.run({ X: new ort.Tensor("float32", new Float32Array(X.bytes().slice().buffer), [1, 16]) });
    const bytes = (t: ort.Tensor): Uint8Array => {
      const d = ortData(t) as Float32Array;
      return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice();
    };
    return { Y: bytes(out.Y), Z: bytes(out.Z), T: bytes(out.T) };
  } finally {
    await session.release();
  }
}

/** Every initializer as tensorcast reads it back: name, type, storage, external ref, bytes. */
async function readBack(path: string): Promise<[string, string, string, string, Uint8Array][]> {
  const f = await openTensorFile(path);
  try {
    const rows: [string, string, string, string, Uint8Array][] = [];
    for (const t of f.tensors) {
      const x = (t as OnnxFileTensor).external;
      rows.push([t.name, t.dtype.name, (t as OnnxFileTensor).storage, x ? `${x.location}@${x.offset}+${x.length}` : "", await t.read(0, t.size)]);
    }
    return rows;
  } finally {
    await f.close();
  }
}

const W16 = cast(W, "float16");

test("a model written with external data: aligned offsets, read back identical, runs as the inline model does", async () => {
  const dir = await folder("small");
  const input = writeInput(dir);
  const out = join(dir, "out.onnx");
  const report = await convertFile(input, out, { to: "float16", names: ["W"], externalData: "out.onnx.data" });
  assert.deepEqual(report.externalData, { path: join(dir, "out.onnx.data"), location: "out.onnx.data", tensors: 3, bytes: 4096 + 1048576, automatic: false });
  // W at 0 (1024 bytes); S at 1024 (a multiple of 64); V, 1 MiB, at the next page.
  assert.deepEqual((await readBack(out)).map((r) => r.slice(0, 4)), [
    ["W", "float16", "external", "out.onnx.data@0+1024"],
    ["B", "float32", "raw", ""],
    ["S", "float32", "external", "out.onnx.data@1024+1200"],
    ["V", "float32", "external", "out.onnx.data@4096+1048576"],
  ]);
  assert.deepEqual((await readBack(out)).map((r) => r[4]), [W16.bytes(), B.bytes(), S.bytes(), V.bytes()]);
  const side = readFileSync(join(dir, "out.onnx.data"));
  const expected = new Uint8Array(4096 + 1048576);
  expected.set(W16.bytes(), 0);
  expected.set(S.bytes(), 1024);
  expected.set(V.bytes(), 4096);
  assert.deepEqual(new Uint8Array(side), expected, "the side file, padding (zeros) included");
  assert.ok(statSync(out).size < 2048, "the model itself holds no large data");
  assert.deepEqual(readdirSync(dir).sort(), ["in.onnx", "out.onnx", "out.onnx.data"], "no temporary left");

  // The same conversion inline: onnxruntime computes the same bits from either.
  const inline = join(dir, "inline.onnx");
  const r2 = await convertFile(input, inline, { to: "float16", names: ["W"] });
  assert.equal(r2.externalData, undefined);
  const [a, b] = [await run(out), await run(inline)];
  assert.deepEqual(a, b);
  assert.deepEqual(a.Z, V.bytes());
  assert.deepEqual(a.T, S.bytes());

  // Round trip: the external model back to inline gives the inline model byte for byte.
  const back = join(dir, "back.onnx");
  await convertFile(out, back, { to: "float16", names: ["W"], externalData: false });
  assert.deepEqual(readFileSync(back), readFileSync(inline));
  // And from a model with external data to another side file, from another folder.
  const dir2 = await folder("small-again");
  const again = join(dir2, "again.onnx");
  await convertFile(out, again, { to: "float16", names: ["W"], externalData: "again.bin" });
  assert.deepEqual(readFileSync(join(dir2, "again.bin")), side);
  assert.deepEqual(await run(again), a);
});

test("onnx (python) loads the model with its external data and its checker passes", { skip: onnxMissing() }, async () => {
  const dir = await folder("python");
  const input = writeInput(dir);
  const out = join(dir, "m.onnx");
  await convertFile(input, out, { to: "float16", names: ["W"], externalData: "m.weights" });
  const script = [
    "import sys, hashlib, onnx",
    "from onnx import numpy_helper",
    "onnx.checker.check_model(sys.argv[1])",
    "m = onnx.load(sys.argv[1])",
    "for t in m.graph.initializer:",
    "    print(t.name, hashlib.sha256(numpy_helper.to_array(t).tobytes()).hexdigest())",
  ].join("\n");
  const r = spawnSync(PYTHON, ["-c", script, out], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const { createHash } = await import("node:crypto");
  const digest = (t: Tensor): string => createHash("sha256").update(t.bytes()).digest("hex");
  assert.equal(r.stdout, `W ${digest(W16)}\nB ${digest(B)}\nS ${digest(S)}\nV ${digest(V)}\n`);
});

test("the side file is renamed into place before the model", async () => {
  const dir = await folder("order");
  const input = writeInput(dir);
  const out = join(dir, "o.onnx");
  const side = join(dir, "o.onnx.data");
  const seen: [string, boolean][] = [];
  // AtomicOutput.commit moves a temporary to its final name with link() (rename() with --force).
  const { link, rename } = fsp;
  const spy = (to: string): void => void seen.push([to, existsSync(side)]);
  fsp.link = async (from, to) => (spy(String(to)), link(from, to));
  fsp.rename = async (from, to) => (spy(String(to)), rename(from, to));
  try {
    await convertFile(input, out, { to: "float16", names: ["W"], externalData: "o.onnx.data" });
    await convertFile(input, out, { to: "float16", names: ["W"], externalData: "o.onnx.data", force: true });
  } finally {
    fsp.link = link;
    fsp.rename = rename;
  }
  // The side file first; when the model appears, its side file is already there.
  assert.deepEqual(seen, [[side, false], [out, true], [side, true], [out, true]]);
});

test("side files that are the model, the input, one of the input's side files or outside the folder are refused", async () => {
  const dir = await folder("refused");
  const input = writeInput(dir);
  const out = join(dir, "o.onnx");
  const cases: [string, string, RegExp][] = [
    ["../x.data", "INVALID_ATTRIBUTE", /--external-data "\.\.\/x\.data" has a "\.\." component; name a file relative to the output's folder, such as "o\.onnx\.data"/],
    ["/tmp/x.data", "INVALID_ATTRIBUTE", /is an absolute path/],
    ["", "INVALID_ATTRIBUTE", /is empty/],
    ["o.onnx", "INVALID_ATTRIBUTE", /is the output model itself/],
    ["./o.onnx", "INVALID_ATTRIBUTE", /is the output model itself/],
    ["in.onnx", "OUTPUT_IS_INPUT", /is the input file; tensorcast never overwrites its input/],
    ["sub/", "INVALID_ATTRIBUTE", /names a directory/],
    ["nofolder/x.data", "IO_ERROR", /its directory .*nofolder does not exist/],
  ];
  for (const [location, code, message] of cases) {
    await rejectsCode(convertFile(input, out, { to: "float16", names: ["W"], externalData: location }), code, message);
  }
  // Only regular files (or symbolic links) are ever replaced, even with --force.
  await fsp.mkdir(join(dir, "adir"));
  await rejectsCode(convertFile(input, out, { to: "float16", names: ["W"], externalData: "adir", force: true }), "INVALID_ATTRIBUTE", /adir: is a directory/);
  assert.equal(spawnSync("mkfifo", [join(dir, "fifo")]).status, 0);
  await rejectsCode(
    convertFile(input, out, { to: "float16", names: ["W"], externalData: "fifo", force: true }), "INVALID_ATTRIBUTE",
    /fifo: is a FIFO \(named pipe\); tensorcast writes only regular files and never replaces anything else, even with --force/,
  );
  await fsp.rmdir(join(dir, "adir"));
  await fsp.unlink(join(dir, "fifo"));
  writeFileSync(join(dir, "o.onnx.data"), "old");
  await rejectsCode(convertFile(input, out, { to: "float16", names: ["W"], externalData: "o.onnx.data" }), "INVALID_ATTRIBUTE", /o\.onnx\.data: already exists; pass --force to replace it/);
  assert.equal(readFileSync(join(dir, "o.onnx.data"), "utf8"), "old");
  await rejectsCode(convertFile(input, join(dir, "o.safetensors"), { to: "float16", externalData: "o.data" }), "INVALID_ATTRIBUTE", /--external-data writes the side file of an \.onnx model; .*o\.safetensors is safetensors/);

  // Converting a model with external data in place, naming its own side file: refused, even with --force.
  const ext = join(dir, "ext.onnx");
  await convertFile(input, ext, { to: "float16", names: ["W"], externalData: "ext.data" });
  const before = readFileSync(join(dir, "ext.data"));
  await rejectsCode(
    convertFile(ext, join(dir, "ext2.onnx"), { to: "float32", names: ["W"], externalData: "ext.data", force: true }),
    "OUTPUT_IS_INPUT", /ext\.data: the side file to write is .*ext\.onnx's own external data file ext\.data; tensorcast never overwrites its input/,
  );
  assert.deepEqual(readFileSync(join(dir, "ext.data")), before);
  assert.deepEqual(readdirSync(dir).sort(), ["ext.data", "ext.onnx", "in.onnx", "o.onnx.data"], "nothing written, no temporary");
});

test("CLI: --external-data and --inline, and what it prints", async () => {
  const dir = await folder("cli");
  const input = writeInput(dir);
  const out = join(dir, "c.onnx");
  const r = await cli(["convert", input, "--to", "float16", "--initializers", "W", "-o", out, "--external-data", "c.bin"]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /3 initializers' data \(1\.00 MiB\) written to the side file .*c\.bin, which .*c\.onnx names as "c\.bin"\n$/);
  const bad = await cli(["convert", input, "--to", "float16", "--initializers", "W", "-o", join(dir, "d.onnx"), "--external-data", "../d.bin"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--external-data: --external-data "\.\.\/d\.bin" has a "\.\." component/);
  const both = await cli(["convert", input, "--to", "float16", "--initializers", "W", "-o", join(dir, "d.onnx"), "--external-data", "d.bin", "--inline"]);
  assert.equal(both.code, 2);
  assert.match(both.err, /--external-data and --inline contradict each other/);
  const st = await cli(["convert", input, "--to", "float16", "-o", join(dir, "d.safetensors"), "--external-data", "d.bin"]);
  assert.equal(st.code, 2);
  assert.match(st.err, /--external-data is about an \.onnx OUT's initializers/);
  // --inline takes the side file's data back in.
  const inl = await cli(["convert", out, "--to", "float16", "--initializers", "W", "-o", join(dir, "e.onnx"), "--inline"]);
  assert.equal(inl.code, 0, inl.err);
  assert.deepEqual((await readBack(join(dir, "e.onnx"))).map((x) => x[2]), ["raw", "raw", "raw", "raw"]);
});

const BIN = join(ROOT, "bin", "tensorcast.js");
const HOOK = join(ROOT, "build", "test", "support", "corrupt-writer.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));

test("a side file that does not read back as planned (offsets, bytes): exit 70, code INTERNAL, neither file, no temporary", { skip: !built && "dist/ is not built (npm run build)" }, async () => {
  const dir = await folder("faults");
  const input = writeInput(dir);
  const cases: [string, RegExp][] = [
    // Every offset 64 bytes late: V, the last, then runs past the side file's end.
    ["side-offset", /tensor "V": its external data is bytes \[4160, 1052736\) of f\.onnx\.data, which has 1052672 bytes/],
    ["side-bytes", /its side file f\.onnx\.data: bytes \[0, 1024\) read back differ from those written/],
  ];
  for (const [fault, message] of cases) {
    const out = join(dir, "f.onnx");
    const r = spawnSync(process.execPath, ["--no-deprecation", "--import", HOOK, BIN, "convert", input, "--to", "float16", "--initializers", "W", "-o", out, "--external-data", "f.onnx.data"], {
      env: { ...process.env, TENSORCAST_TEST_CORRUPT: fault }, encoding: "utf8",
    });
    assert.equal(r.status, 70, `${fault}: ${r.stderr}`);
    assert.match(r.stderr, /^internal error: .*f\.onnx: the onnx file written does not read back as planned \(.+\), so it was removed and nothing was written \(code INTERNAL\)/);
    assert.match(r.stderr, message, fault);
    assert.deepEqual(readdirSync(dir), ["in.onnx"], fault);
  }
});
