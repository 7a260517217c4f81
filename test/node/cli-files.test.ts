/**
 * The convert, inspect and diff commands, in-process: their tables and JSON, exit codes (0 done,
 * 1 bad input, 2 usage error), messages that name the file and the tensor, the progress bar
 * (drawn on a terminal only), and `convert --example`, which `npm start` runs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exampleCheckpoint } from "../../src/node/index.js";
import type { ConvertReport, DiffReport, InspectReport } from "../../src/node/index.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { cli, rawSafetensors, ROOT, scratch } from "./helpers.js";

const dir = scratch();
const example = join(dir, "example.safetensors");
writeFileSync(example, exampleCheckpoint());

test("convert prints one row per tensor and a total", async () => {
  const out = join(dir, "bf16.safetensors");
  const r = await cli(["convert", example, "--to", "bfloat16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  const lines = r.out.trimEnd().split("\n");
  assert.match(lines[0], /example\.safetensors -> .*bf16\.safetensors  \(safetensors -> safetensors, to bfloat16, saturate=true\)/);
  assert.match(lines[1], /^tensor\s+shape\s+from\s+to\s+max abs err\s+max rel err\s+saturated\s+non-finite$/);
  assert.match(r.out, /\noutliers\s+\[10\]\s+float32\s+bfloat16\s+\S+\s+\S+\s+0\s+1\n/);
  assert.match(r.out, /\nposition_ids\s+\[1, 16\]\s+int64\s+kept \(not floating-point\)\n/);
  assert.match(r.out, /\n5 of 6 tensors converted; 2\.22 KiB -> 1\.45 KiB in .* s \(.*\/s, 1 thread\)\n$/);
  assert.ok(existsSync(out));
});

test("convert --json is the report", async () => {
  const r = await cli(["convert", example, "--to", "float8e5m2", "--no-saturate", "--only", "outliers", "-o", join(dir, "j.safetensors"), "--json"]);
  assert.equal(r.code, 0, r.err);
  const report = JSON.parse(r.out) as ConvertReport;
  assert.equal(report.saturate, false);
  assert.deepEqual(report.tensors.filter((t) => t.converted).map((t) => t.name), ["outliers"]);
  assert.equal(report.tensors.find((t) => t.name === "outliers")!.stats!.nonFinite, 2); // 65504 -> inf, NaN
});

test("usage errors exit 2 and say what is accepted", async () => {
  const cases: [string[], RegExp][] = [
    [["convert", example, "-o", join(dir, "x.safetensors")], /convert needs --to TYPE/],
    [["convert", example, "--to", "float9", "-o", join(dir, "x.safetensors")], /--to: unknown data type "float9"/],
    [["convert", example, "--to", "bfloat16"], /needs an output file: -o OUT/],
    [["convert", "--to", "bfloat16", "-o", join(dir, "x.safetensors")], /needs an input file/],
    [["convert", example, "--to", "bfloat16", "--only", "(", "-o", join(dir, "x.safetensors")], /--only "\(" is not a regular expression/],
    [["convert", example, "--to", "bfloat16", "-o", example], /is the input file; tensorcast never overwrites its input/],
    [["convert", example, "--to", "bfloat16", "-o", join(dir, "bf16.safetensors")], /already exists; pass --force/],
    [["convert", example, "--to", "bfloat16", "--saturate", "--no-saturate", "-o", join(dir, "x.safetensors")], /contradict/],
    [["convert", example, "--to", "bfloat16", "--jobs", "many", "-o", join(dir, "x.safetensors")], /--jobs "many"/],
    [["convert", example, "--to", "bfloat16", "--format", "tflite", "-o", join(dir, "x.safetensors")], /--format "tflite" is not a format/],
    [["inspect"], /inspect takes one file; got 0/],
    [["diff", example], /diff takes two files; got 1/],
  ];
  for (const [argv, pattern] of cases) {
    const r = await cli(argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.match(r.err, pattern);
    assert.equal(r.out, "");
  }
  assert.ok(!existsSync(join(dir, "x.safetensors")));
});

test("bad input exits 1 (a missing file 74, IO_ERROR) naming the file and the tensor; nothing is written", async () => {
  const truncated = join(dir, "truncated.safetensors");
  writeFileSync(truncated, exampleCheckpoint().subarray(0, 1000));
  const lying = join(dir, "lying.safetensors");
  writeFileSync(lying, rawSafetensors('{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', new Uint8Array(8)));
  const cases: [string, RegExp, number][] = [
    [join(dir, "missing.safetensors"), /missing\.safetensors: cannot open it: no such file or directory \(code IO_ERROR\)/, 74],
    [truncated, /truncated\.safetensors: tensor "[^"]+": data_offsets \[\d+, \d+\] reach past the end of the data/, 1],
    [lying, /lying\.safetensors: tensor "w": data_offsets \[0, 16\] reach past the end of the data \(8 bytes\)/, 1],
  ];
  for (const [path, pattern, code] of cases) {
    const out = join(dir, "never.safetensors");
    for (const argv of [["convert", path, "--to", "bfloat16", "-o", out], ["inspect", path], ["diff", path, example]]) {
      const r = await cli(argv);
      assert.equal(r.code, code, `${argv.join(" ")}: ${r.err}`);
      assert.match(r.err, pattern);
      assert.ok(!existsSync(out));
    }
  }
});

test("a tensor is named once in a message (it read tensor \"t\": tensor \"t\": before)", async () => {
  // A .pb TensorProto "t" of FLOAT [4] whose float_data holds 3 entries: the core's decoder names
  // the tensor itself, and neither the file reader nor the converter may name it again.
  const w = new WireWriter();
  w.int64Field(1, 4).uint32Field(2, 1).stringField(8, "t").tag(4, 2).lengthPrefix(12).raw(new Uint8Array(12));
  const path = join(dir, "short-floats.pb");
  writeFileSync(path, w.finish());
  const message = `error: ${path}: tensor "t": float_data holds 3 entries; shape [4] of FLOAT needs 4 elements (code SHAPE_MISMATCH)\n`;
  for (const argv of [["convert", path, "--to", "float16", "-o", join(dir, "short-floats.f16.pb")], ["inspect", path]]) {
    const r = await cli(argv);
    assert.deepEqual([r.code, r.err], [1, message], argv.join(" "));
  }
});

test("a FIFO given as IN is refused at once (opening it used to wait forever for a writer)", { timeout: 60_000 }, () => {
  const fifo = join(dir, "in.fifo.safetensors");
  execFileSync("mkfifo", [fifo]);
  const bin = join(ROOT, "bin", "tensorcast.js");
  for (const argv of [["inspect", fifo], ["convert", fifo, "--to", "float16", "-o", join(dir, "from-fifo.safetensors")]]) {
    // A child process, killed outright if it hangs: a blocked open() would also hang this process.
    const r = spawnSync(process.execPath, [bin, ...argv], { encoding: "utf8", timeout: 20_000, killSignal: "SIGKILL" });
    assert.equal(r.signal, null, `${argv[0]} hung on a FIFO`);
    assert.deepEqual([r.status, r.stderr], [1, `error: ${fifo}: is not a regular file (code INVALID_DATA)\n`]);
  }
  assert.ok(!existsSync(join(dir, "from-fifo.safetensors")));
});

test("inspect: a table with statistics, --json, --no-stats", async () => {
  const r = await cli(["inspect", example]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split("\n");
  assert.match(lines[0], /example\.safetensors: safetensors, 6 tensors, 2\.22 KiB, metadata \{"format":"pt","source":"tensorcast built-in example"\}/);
  assert.match(lines[1], /^tensor\s+dtype\s+shape\s+bytes\s+min\s+max\s+mean\s+nan\s+inf$/);
  assert.match(r.out, /\noutliers\s+float32\s+\[10\]\s+40\s+0\s+65504\s+7544\s+1\s+0\n/);
  assert.match(r.out, /\nposition_ids\s+int64\s+\[1, 16\]\s+128\s+0\s+15\s+7\.5\s+0\s+0\n/);
  const json = JSON.parse((await cli(["inspect", example, "--json"])).out) as InspectReport;
  assert.equal(json.format, "safetensors");
  const norm = json.tensors.find((t) => t.name === "layers.0.norm.weight")!;
  assert.deepEqual([norm.dtype, norm.shape, norm.stats!.min, norm.stats!.max, norm.stats!.finite], ["float16", [16], 1, 1 + 15 / 64, 16]);
  const bare = await cli(["inspect", example, "--no-stats"]);
  assert.match(bare.out.split("\n")[1], /^tensor\s+dtype\s+shape\s+bytes$/);
});

test("diff: per-tensor errors, in ULPs of the coarser type", async () => {
  const f8 = join(dir, "f8.safetensors");
  assert.equal((await cli(["convert", example, "--to", "float8e4m3fn", "-o", f8])).code, 0);
  const r = await cli(["diff", example, f8]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^tensor\s+dtype \(A \/ B\)\s+shape\s+differing\s+max abs err\s+max rel err\s+max ulp\s+non-finite mismatch$/m);
  assert.match(r.out, /\nembed\.weight\s+float32 \/ float8e4m3fn\s+\[8, 16\]\s+\d+ of 128\s+\S+\s+\S+\s+0\.\d+\s+0\n/);
  assert.match(r.out, /\nposition_ids\s+int64\s+\[1, 16\]\s+0 of 16\s+0\s+0\s+0\s+0\n/);
  assert.match(r.out, /\n1 of 6 common tensors identical\n$/);
  const json = JSON.parse((await cli(["diff", example, f8, "--json"])).out) as DiffReport;
  for (const t of json.tensors) {
    // Correctly rounded, where nothing saturated: at most half an ULP of float8e4m3fn.
    if (t.name !== "outliers") assert.ok(t.stats!.maxUlp <= 0.5, `${t.name}: ${t.stats!.maxUlp}`);
  }
  // 65504 -> 448: (65504 - 448) / 32, float8e4m3fn's ULP at 448.
  assert.equal(json.tensors.find((t) => t.name === "outliers")!.stats!.maxUlp, (65504 - 448) / 32);
  const self = JSON.parse((await cli(["diff", example, example, "--json"])).out) as DiffReport;
  assert.equal(self.identical, 6);
});

test("the progress bar is drawn on a terminal only, and never with --quiet or in CI", async () => {
  const ci = process.env.CI;
  delete process.env.CI;
  try {
    const tty = await cli(["convert", example, "--to", "float16", "-o", join(dir, "p1.safetensors")], true);
    assert.equal(tty.code, 0, tty.err);
    assert.match(tty.err, /\rconverting \[#+-*\] +\d+%  .* \/ 1\.70 KiB  .*\/s  ETA /);
    assert.ok(tty.err.endsWith("\r\x1b[K"), JSON.stringify(tty.err.slice(-20)));
    const quiet = await cli(["convert", example, "--to", "float16", "-q", "-o", join(dir, "p2.safetensors")], true);
    assert.equal(quiet.err, "");
    const pipe = await cli(["convert", example, "--to", "float16", "-o", join(dir, "p3.safetensors")], false);
    assert.equal(pipe.err, "");
    process.env.CI = "true";
    const inCi = await cli(["convert", example, "--to", "float16", "-o", join(dir, "p4.safetensors")], true);
    assert.equal(inCi.err, "");
  } finally {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
  }
});

test("convert --example converts the built-in checkpoint to float8e4m3fn and says where it is", async () => {
  const r = await cli(["convert", "--example"]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /to float8e4m3fn, saturate=true/);
  assert.match(r.out, /\noutliers\s+\[10\]\s+float32\s+float8e4m3fn\s+65056\s+1\s+3\s+1\n/);
  const m = /The example files are in (\S+)\./.exec(r.out);
  assert.ok(m && existsSync(join(m[1], "example.float8e4m3fn.safetensors")));
  assert.deepEqual(new Uint8Array(readFileSync(join(m[1], "example.safetensors"))), exampleCheckpoint());
  rmSync(m[1], { recursive: true, force: true });
  assert.equal((await cli(["convert", "--example", "example.safetensors"])).code, 2);
});

test("help lists the three commands; each has its help", async () => {
  const r = await cli(["--help"]);
  for (const name of ["convert", "inspect", "diff"]) {
    assert.match(r.out, new RegExp(`\\n  ${name}\\s+\\S`));
    const h = await cli(["help", name]);
    assert.equal(h.code, 0);
    assert.match(h.out, new RegExp(`^Usage: tensorcast ${name} `));
  }
});
