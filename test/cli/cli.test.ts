import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli as run } from "../support/cli.js";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { castValues, main, packageVersion, type CastReport, type CastRow, type TypeRow } from "../../src/node/index.js";


async function castJson(...argv: string[]): Promise<CastReport> {
  const r = await run("cast", "--json", ...argv);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  return JSON.parse(r.out) as CastReport;
}

async function rows(...argv: string[]): Promise<CastRow[]> {
  return [...(await castJson(...argv)).rows];
}

// build/test/cli/ -> the repository root.
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

test("cast prints the README example as an aligned table", async () => {
  const r = await run("cast", "--from", "float32", "--to", "float8e4m3fn", "1.5", "448", "1000", "nan");
  assert.equal(r.code, 0);
  assert.equal(r.err, "");
  const lines = r.out.trimEnd().split("\n");
  assert.match(lines[0], /^float32 -> float8e4m3fn .*saturate=true/);
  assert.match(lines[1], /^input\s+float32\s+code\s+s\|exp\|man\s+float8e4m3fn\s+abs err\s+rel err\s+flag$/);
  assert.equal(lines.length, 6);
  assert.match(lines[2], /1\.5\s+0x3c\s+0\|0111\|100\s+1\.5\s+0\s+0\s+exact$/);
  assert.match(lines[4], /1000\s+0x7e\s+0\|1111\|110\s+448\s+552\s+0\.552\s+saturated$/);
  assert.match(lines[5], /nan\s+0x7f\s+0\|1111\|111\s+nan\s+-\s+-\s+exact$/);
  // Aligned: the code column starts at the same offset on every row.
  const at = lines[1].indexOf("code");
  for (const line of lines.slice(2)) assert.equal(line.slice(at, at + 2), "0x");
});

test("cast --json gives the same rows, values as exact strings", async () => {
  const report = await castJson("--from", "float32", "--to", "float8e4m3fn", "1.5", "448", "1000", "nan", "0.1");
  assert.equal(report.from, "float32");
  assert.equal(report.to, "float8e4m3fn");
  assert.equal(report.operator, "Cast-28");
  assert.deepEqual(report.rows.map((r) => r.code), ["0x3c", "0x7e", "0x7e", "0x7f", "0x1d"]);
  assert.deepEqual(report.rows.map((r) => r.flag), ["exact", "exact", "saturated", "exact", "rounded"]);
  assert.deepEqual(report.rows[2], {
    input: "1000", source: "1000", sourceChanged: false, code: "0x7e", binary: "0|1111|110",
    result: "448", absError: 552, relError: 0.552, flag: "saturated",
  });
  assert.equal(report.rows[3].absError, null);
  // 0.1 is not a float32: the stored value is shown.
  assert.equal(report.rows[4].source, "0.10000000149011612");
  assert.equal(report.rows[4].sourceChanged, true);
  assert.equal(report.rows[4].result, "0.1015625");
});

test("saturation is told apart from rounding to max and from overflow", async () => {
  const e4m3 = await rows("--to", "float8e4m3fn", "464", "465", "480");
  // 464 is a tie that rounds to even (448) without any clamping; 465 and 480 would round past max.
  assert.deepEqual(e4m3.map((r) => [r.result, r.flag]), [["448", "rounded"], ["448", "saturated"], ["448", "saturated"]]);
  const f16 = await rows("--to", "float16", "65519", "65520", "1e-8");
  assert.deepEqual(f16.map((r) => [r.code, r.result, r.flag]), [
    ["0x7bff", "65504", "rounded"], ["0x7c00", "inf", "overflow"], ["0x0000", "0", "underflow"],
  ]);
});

test("--no-saturate: float8 overflows to NaN, or to inf where the format has it", async () => {
  const e4m3 = await rows("--to", "float8e4m3fn", "--no-saturate", "1000", "-1000", "-inf");
  assert.deepEqual(e4m3.map((r) => [r.code, r.result, r.flag]), [
    ["0x7f", "nan", "nan"], ["0xff", "-nan", "nan"], ["0xff", "-nan", "nan"],
  ]);
  const e5m2 = await rows("--to", "float8e5m2", "--no-saturate", "61440", "-inf");
  assert.deepEqual(e5m2.map((r) => [r.code, r.result, r.flag]), [["0x7c", "inf", "overflow"], ["0xfc", "-inf", "exact"]]);
  const saturating = await castJson("--to", "float8e5m2", "--saturate", "61440");
  assert.equal(saturating.saturate, true);
  assert.equal(saturating.rows[0].flag, "saturated");
});

test("negative numbers and the special values are values, not options", async () => {
  const r = await rows("--from", "float32", "--to", "float8e4m3fn", "-1.5", "-nan", "-inf", "+inf", "NaN", "-0", "Infinity", ".5", "1e-3");
  assert.deepEqual(r.map((x) => x.input), ["-1.5", "-nan", "-inf", "+inf", "NaN", "-0", "Infinity", ".5", "1e-3"]);
  assert.deepEqual(r.map((x) => x.code), ["0xbc", "0xff", "0xfe", "0x7e", "0x7f", "0x80", "0x7e", "0x30", "0x01"]);
  assert.equal(r[1].result, "-nan");
  assert.equal(r[5].result, "-0");
});

test("packed targets show the element's own code", async () => {
  const f4 = await rows("--to", "float4e2m1", "1.5", "-6", "7", "nan", "0.25");
  assert.deepEqual(f4.map((r) => [r.code, r.binary, r.result, r.flag]), [
    ["0x3", "0|01|1", "1.5", "exact"],
    ["0xf", "1|11|1", "-6", "exact"],
    ["0x7", "0|11|1", "6", "saturated"],
    ["0x8", "1|00|0", "-0", "nan lost"], // ONNX: +NaN becomes the -0 code in types without NaN
    ["0x0", "0|00|0", "0", "underflow"],
  ]);
  const f6 = await rows("--to", "float6e3m2", "30", "29", "-0.0625");
  assert.deepEqual(f6.map((r) => [r.code, r.binary, r.flag]), [
    ["0x1f", "0|111|11", "saturated"], ["0x1f", "0|111|11", "rounded"], ["0x21", "1|000|01", "exact"],
  ]);
  const i4 = await rows("--to", "int4", "-8", "7", "16", "3.7");
  assert.deepEqual(i4.map((r) => [r.code, r.binary, r.result, r.flag]), [
    ["0x8", "1000", "-8", "exact"], ["0x7", "0111", "7", "exact"], ["0x0", "0000", "0", "out of range"],
    ["0x3", "0011", "3", "rounded"],
  ]);
});

test("e8m0 has no sign or mantissa field and honours --round-mode", async () => {
  const up = await rows("--to", "float8e8m0", "3", "0", "1e39");
  assert.deepEqual(up.map((r) => [r.code, r.binary, r.flag]), [
    ["0x81", "10000001", "rounded"], ["0x00", "00000000", "saturated"], ["0xfe", "11111110", "saturated"],
  ]);
  const down = await castJson("--to", "float8e8m0", "--round-mode", "down", "3");
  assert.equal(down.roundMode, "down");
  assert.equal(down.rows[0].result, "2");
  const text = await run("cast", "--to", "float8e8m0", "--round-mode", "nearest", "3");
  assert.match(text.out, /round_mode=nearest/);
});

test("64-bit integers and float64 keep every digit", async () => {
  const r = await rows("--from", "int64", "--to", "float32", "9223372036854775807", "16777217");
  assert.deepEqual(r.map((x) => [x.source, x.result, x.absError, x.flag]), [
    ["9223372036854775807", "9223372036854775808", 1, "rounded"],
    ["16777217", "16777216", 1, "rounded"],
  ]);
  const f64 = await rows("--to", "float64", "9007199254740993", "-nan");
  assert.equal(f64[0].source, "9007199254740992");
  assert.equal(f64[0].sourceChanged, true);
  assert.equal(f64[0].code, "0x4340000000000000");
  assert.equal(f64[1].code, "0xfff8000000000000");
  assert.equal(f64[1].binary.split("|").map((f) => f.length).join(","), "1,11,52");
});

test("integer and bool targets: truncation, wrapping, NaN and nonzero", async () => {
  const i8 = await rows("--to", "int8", "1.5", "-1.5", "300", "nan");
  assert.deepEqual(i8.map((r) => [r.code, r.result, r.flag]), [
    ["0x01", "1", "rounded"], ["0xff", "-1", "rounded"], ["0x2c", "44", "out of range"], ["0x00", "0", "nan lost"],
  ]);
  const b = await rows("--to", "bool", "0", "0.5", "nan");
  assert.deepEqual(b.map((r) => [r.code, r.result, r.flag]), [["0x00", "false", "exact"], ["0x01", "true", "nonzero"], ["0x01", "true", "nan lost"]]);
});

test("--opset selects the Cast version, and types it lacks are bad input", async () => {
  const ok = await castJson("--to", "float8e4m3fn", "--opset", "20", "1");
  assert.equal(ok.operator, "Cast-19");
  const r = await run("cast", "--to", "float8e4m3fn", "--opset", "18", "1");
  assert.equal(r.code, 1);
  assert.match(r.err, /^error: Cast-13 does not accept float8e4m3fn .*\(code UNSUPPORTED_TYPE\)\n$/);
  const e8m0 = await run("cast", "--to", "float8e8m0", "--round-mode", "up", "--opset", "23", "1");
  assert.equal(e8m0.code, 1);
});

test("types are accepted by name, alias, ONNX enum name or number", async () => {
  for (const name of ["float8e4m3fn", "f8e4m3", "FLOAT8E4M3FN", "17"]) {
    assert.equal((await castJson("--to", name, "1")).to, "float8e4m3fn");
  }
});

test("library errors exit 1 with the message and its code on stderr", async () => {
  const unknown = await run("cast", "--to", "float9", "1");
  assert.equal(unknown.code, 1);
  assert.equal(unknown.out, "");
  assert.match(unknown.err, /^error: --to: unknown data type "float9" \(closest: float32, float16, float64, float4e2m1\); expected a name such as float32.*\(code UNKNOWN_DTYPE\)\n$/);
  const fraction = await run("cast", "--from", "int8", "--to", "float16", "1.5");
  assert.equal(fraction.code, 1);
  assert.match(fraction.err, /cannot store 1\.5 in the --from type int8: .*not an integer.*\(code INVALID_VALUE\)/);
  // fromValues refuses what the source type cannot hold rather than saturating it.
  const inf = await run("cast", "--from", "float8e4m3fn", "--to", "float16", "inf");
  assert.equal(inf.code, 1);
  assert.match(inf.err, /cannot store inf in the --from type float8e4m3fn: .*\(code INVALID_VALUE\)/);
  const nan = await run("cast", "--from", "float4e2m1", "--to", "float16", "nan");
  assert.equal(nan.code, 1);
  assert.match(nan.err, /INVALID_VALUE/);
  const complex = await run("cast", "--to", "complex64", "1");
  assert.equal(complex.code, 1);
  assert.match(complex.err, /UNSUPPORTED_TYPE/);
  const opset = await run("cast", "--to", "float16", "--opset", "0", "1");
  assert.equal(opset.code, 1);
  assert.match(opset.err, /INVALID_OPSET/);
});

test("an internal error exits 70 with one line asking for a report; the stack only with TENSORCAST_DEBUG=1", async () => {
  // A bug stand-in: the output stream throws something that is not a TensorcastError.
  const broken = async (): Promise<{ code: number; err: string }> => {
    let err = "";
    const code = await main(["types"], {
      stdout: { write: () => { throw new TypeError("stdout broke"); } },
      stderr: { write: (s: string) => (err += s) },
    });
    return { code, err };
  };
  const saved = process.env.TENSORCAST_DEBUG;
  try {
    delete process.env.TENSORCAST_DEBUG;
    const line =
      `internal error: TypeError: stdout broke. This is a bug in tensorcast ${packageVersion()}: please report it ` +
      "with the command you ran (TENSORCAST_DEBUG=1 prints the stack trace).\n";
    assert.deepEqual(await broken(), { code: 70, err: line });
    process.env.TENSORCAST_DEBUG = "1";
    const debug = await broken();
    assert.equal(debug.code, 70);
    assert.ok(debug.err.startsWith(`${line}TypeError: stdout broke\n    at `), debug.err);
  } finally {
    if (saved === undefined) delete process.env.TENSORCAST_DEBUG;
    else process.env.TENSORCAST_DEBUG = saved;
  }
  // Every exit code is listed in the overview.
  const help = await run("--help");
  assert.match(help.out, /Exit codes: 0 success; 1 input the library rejects .*; 2 usage error;\n  70 internal error .*; 74 file system error \(code IO_ERROR[^)]*\n[^)]*\); 129, 130, 143 stopped by SIGHUP, SIGINT, SIGTERM\.\n/);
});

test("usage errors exit 2 and name what was given and what is allowed", async () => {
  const cases: [argv: string[], message: RegExp][] = [
    [["frobnicate"], /unknown command "frobnicate"; the commands are cast, types, example, conformance, promote, convert, quantize, index, inspect, diff, help/],
    [["--frobnicate"], /unknown option "--frobnicate"; before a command tensorcast accepts --help and --version/],
    [["cast", "--to", "float16", "--bogus", "1"], /unknown option "--bogus" for cast; it accepts --from, --to, .*--json/],
    [["cast", "-x", "--to", "float16", "1"], /unknown option "-x" for cast/],
    [["cast", "1.5"], /cast needs a target type: --to <type>/],
    [["cast", "--to"], /--to needs a value: a data type such as float8e4m3fn/],
    [["cast", "--to", "--json", "1"], /--to needs a value.*got the option "--json" instead/],
    [["cast", "--to", "float16"], /cast needs at least one value/],
    [["cast", "--to", "float16", "0x10"], /"0x10" is not a value cast accepts; expected a decimal literal/],
    [["cast", "--to", "float16", "1_000"], /"1_000" is not a value/],
    [["cast", "--to", "float16", ""], /"" is not a value/],
    [["cast", "--to", "float16", "-0x10"], /"-0x10" is not a value/],
    [["cast", "--to", "float16", "--json=yes", "1"], /--json is a switch and takes no value; got --json=yes/],
    [["cast", "--to", "float16", "--opset", "19.5", "1"], /--opset must be a whole number .*; got "19\.5"/],
    [["cast", "--to", "float16", "--opset", "-1", "1"], /--opset must be a whole number .*; got "-1"/],
    [["cast", "--to", "float8e8m0", "--round-mode", "sideways", "1"], /--round-mode must be one of up, down, nearest; got "sideways"/],
    [["cast", "--to", "float16", "--saturate", "--no-saturate", "1"], /--saturate and --no-saturate contradict/],
    [["types", "extra"], /types takes no arguments; got "extra"/],
    [["example", "1.5"], /example takes no arguments; got "1\.5"/],
    [["help", "nope"], /no help for "nope": it is not a command; the commands are cast, types, example, conformance, promote, convert, quantize, index, inspect, diff, help/],
    [["--version", "x"], /--version takes no arguments/],
  ];
  for (const [argv, message] of cases) {
    const r = await run(...argv);
    assert.equal(r.code, 2, `${argv.join(" ")}: ${r.err}`);
    assert.equal(r.out, "", argv.join(" "));
    assert.match(r.err, /^error: /, argv.join(" "));
    assert.match(r.err, message, argv.join(" "));
    assert.match(r.err, /Run "tensorcast help( \w+)?" for usage\.\n$/, argv.join(" "));
  }
});

test("-- ends the options, so anything after it is a value", async () => {
  const r = await rows("--to", "float16", "--", "-1", "2");
  assert.deepEqual(r.map((x) => x.result), ["-1", "2"]);
  const bad = await run("cast", "--to", "float16", "--", "--json");
  assert.equal(bad.code, 2);
  assert.match(bad.err, /"--json" is not a value/);
});

test("types lists all 28 data types", async () => {
  const r = await run("types");
  assert.equal(r.code, 0);
  const lines = r.out.trimEnd().split("\n");
  assert.equal(lines.length, 29);
  assert.match(lines[0], /^name\s+onnx\s+onnx name\s+bits\s+kind\s+min\s+max\s+min normal\s+min subnormal\s+aliases$/);
  const e4m3 = lines.find((l) => l.startsWith("float8e4m3fn "));
  assert.match(e4m3 ?? "", /^float8e4m3fn\s+17\s+FLOAT8E4M3FN\s+8\s+float\s+-448\s+448\s+0\.015625\s+0\.001953125\s+f8e4m3, /);
  assert.match(lines.find((l) => l.startsWith("float32 ")) ?? "", /2\^-126\s+2\^-149/);
  assert.match(lines.find((l) => l.startsWith("int4 ")) ?? "", /4 packed\s+int\s+-8\s+7/);

  const json = await run("types", "--json");
  const types = JSON.parse(json.out) as TypeRow[];
  assert.equal(types.length, 28);
  assert.deepEqual(types.map((t) => t.onnx), Array.from({ length: 28 }, (_, i) => i + 1));
  const int64 = types.find((t) => t.name === "int64");
  assert.equal(int64?.min, "-9223372036854775808");
  const string = types.find((t) => t.name === "string");
  assert.equal(string?.max, null);
  assert.equal(types.find((t) => t.name === "float8e4m3fn")?.max, 448);
});

test("example casts the fixed values to four types and shows how to run cast", async () => {
  const r = await run("example");
  assert.equal(r.code, 0);
  assert.equal(r.err, "");
  for (const to of ["float8e4m3fn", "float8e5m2", "float4e2m1", "bfloat16"]) {
    assert.match(r.out, new RegExp(`^float32 -> ${to} `, "m"));
  }
  assert.match(r.out, /^Cast your own values: tensorcast cast .*$/m);
  const json = JSON.parse((await run("example", "--json")).out) as CastReport[];
  assert.equal(json.length, 4);
  assert.deepEqual(json[0].rows.map((row) => row.input), ["0.1", "1.5", "448", "464", "480", "1000", "65504", "1e-7", "-0", "nan", "inf"]);
});

test("help and version", async () => {
  const overview = await run("--help");
  assert.equal(overview.code, 0);
  assert.match(overview.out, /Usage: tensorcast <command>/);
  for (const name of ["cast", "types", "example", "help"]) assert.match(overview.out, new RegExp(`^  ${name} `, "m"));
  assert.equal((await run("help")).out, overview.out);
  assert.equal((await run("-h")).out, overview.out);

  const castHelp = await run("help", "cast");
  assert.equal(castHelp.code, 0);
  assert.match(castHelp.out, /^Usage: tensorcast cast --to <type>/);
  assert.equal((await run("cast", "--help")).out, castHelp.out);
  assert.match((await run("help", "types")).out, /^Usage: tensorcast types/);
  assert.match((await run("example", "-h")).out, /^Usage: tensorcast example/);

  const none = await run();
  assert.equal(none.code, 2);
  assert.equal(none.out, "");
  assert.match(none.err, /Usage: tensorcast <command>/);

  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const version = await run("--version");
  assert.equal(version.code, 0);
  assert.equal(version.out, `${pkg.version}\n`);
});

test("castValues is usable from code", () => {
  const report = castValues(["1.5", "-inf"], { from: "float32", to: "float8e5m2", saturate: false });
  assert.deepEqual(report.rows.map((r) => [r.code, r.flag]), [["0x3e", "exact"], ["0xfc", "exact"]]);
});

const BIN = join(ROOT, "bin", "tensorcast.js");
const DIST_MAIN = join(ROOT, "dist", "node", "cli", "main.js");

test("bin/tensorcast.js runs the built CLI", {
  skip: existsSync(DIST_MAIN) ? false : "dist/ is not built (run npm run build); the shim imports dist/node/cli/main.js",
}, () => {
  const out = execFileSync(process.execPath, [BIN, "types"], { encoding: "utf8" });
  assert.match(out, /^name\s+onnx/);
  assert.match(out, /^float6e3m2\s+28\s/m);
});

test("bin/tensorcast.js: an exception no command caught is reported like any bug, exit 70", {
  skip: existsSync(DIST_MAIN) ? false : "dist/ is not built (run npm run build); the shim imports dist/node/cli/main.js",
}, () => {
  // A listener that throws once the command is done stands in for a bug in a callback.
  const late = 'data:text/javascript,process.once("beforeExit", () => { throw new RangeError("late"); })';
  const r = spawnSync(process.execPath, ["--import", late, BIN, "types"], { encoding: "utf8", env: { ...process.env, TENSORCAST_DEBUG: "" } });
  assert.equal(r.status, 70, r.stderr);
  assert.match(r.stderr, /^internal error: RangeError: late\. This is a bug in tensorcast \S+: please report it with the command you ran \(TENSORCAST_DEBUG=1 prints the stack trace\)\.\n$/);
});
