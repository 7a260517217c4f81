/**
 * `tensorcast promote`: one pair as text and JSON, refusals with OpenVINO's sentence and exit 1,
 * usage errors with exit 2, and --table printing exactly what promoteTypes gives for all 324 pairs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli as run } from "../support/cli.js";
import { PROMOTE_TYPES, PROMOTION_ERRORS, promoteTypes, type PromoteOptions } from "../../src/ops/promote.js";


async function ok(...argv: string[]): Promise<string> {
  const r = await run(...argv);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, "");
  return r.out;
}

test("promote prints the common type of a pair", async () => {
  assert.equal(await ok("promote", "f16", "bf16", "--unsafe"), "f16 + bf16 -> f32 (tensorcast float32)\n");
  assert.equal(await ok("promote", "i8", "f32"), "i8 + f32 -> f32 (tensorcast float32)\n");
  // tensorcast names are echoed in OpenVINO's spelling.
  assert.equal(await ok("promote", "float8e4m3fn", "float8e5m2", "--unsafe"), "f8e4m3 + f8e5m2 -> f16 (tensorcast float16)\n");
  assert.equal(await ok("promote", "u1", "boolean"), "u1 + boolean -> u1 (no tensorcast type)\n");
  assert.equal(await ok("promote", "dynamic", "f32"), "dynamic + f32 -> dynamic (no tensorcast type)\n");
  assert.equal(await ok("promote", "u64", "i16", "--unsafe", "--u64-target", "i64"), "u64 + i16 -> i64 (tensorcast int64)\n");
});

test("promote --pytorch: ranks in OpenVINO's S()/D() notation; unknown ranks give dynamic", async () => {
  assert.equal(
    await ok("promote", "i64", "u8", "--pytorch", "--unsafe", "--a-rank", "0", "--b-rank", "1"),
    "S(i64) + D(u8) -> u8 (tensorcast uint8)\n",
  );
  assert.equal(
    await ok("promote", "f16", "bf16", "--pytorch", "--a-rank", "2", "--b-rank", "0"),
    "D(f16) + S(bf16) -> f16 (tensorcast float16)\n",
  );
  assert.equal(
    await ok("promote", "i64", "u8", "--pytorch"),
    "i64 + u8 -> dynamic (decided by the ranks: give --a-rank and --b-rank)\n",
  );
  // Mixed int/float never looks at the ranks.
  assert.equal(await ok("promote", "f16", "i8", "--pytorch"), "f16 + i8 -> f16 (tensorcast float16)\n");
});

test("promote --json", async () => {
  const report = JSON.parse(await ok("promote", "float16", "bfloat16", "--unsafe", "--json", "--u64-target", "float64"));
  assert.deepEqual(report, {
    a: "f16", b: "bf16", aRank: null, bRank: null, promoteUnsafe: true, pytorchScalarPromotion: false,
    u64IntegerPromotionTarget: "f64", result: "f32", dtype: "float32",
  });
  const u1 = JSON.parse(await ok("promote", "u1", "u1", "--json"));
  assert.equal(u1.dtype, null);
});

test("a refused pair prints OpenVINO's sentence and exits with 1", async () => {
  for (const [a, b, extra, sentence] of [
    ["f16", "bf16", [], PROMOTION_ERRORS.unsupportedPair],
    ["u8", "f8e4m3", [], PROMOTION_ERRORS.intToFloat],
    ["u64", "i8", [], PROMOTION_ERRORS.unsignedToSigned],
    ["i64", "u8", ["--pytorch", "--a-rank", "0", "--b-rank", "1"], PROMOTION_ERRORS.pytorchScalar],
  ] as const) {
    const r = await run("promote", a, b, ...extra);
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.ok(r.err.startsWith("error: ") && r.err.includes(sentence), r.err);
    assert.match(r.err, /With promoteUnsafe: true the result is \w+\. \(code PROMOTION_ERROR\)\n$/);
  }
  const nf4 = await run("promote", "nf4", "f32");
  assert.equal(nf4.code, 1);
  assert.match(nf4.err, /does not accept nf4; it accepts boolean, u1, .*, f64 \(and dynamic\) \(code UNSUPPORTED_TYPE\)/);
  const foo = await run("promote", "f32", "foo");
  assert.match(foo.err, /unknown data type "foo"; ConvertPromoteTypes accepts boolean/);
  const target = await run("promote", "u64", "i8", "--unsafe", "--u64-target", "float8e4m3fnuz");
  assert.equal(target.code, 1);
  assert.match(target.err, /u64IntegerPromotionTarget must name an OpenVINO element type .*\(code INVALID_ATTRIBUTE\)/);
});

test("usage errors exit with 2", async () => {
  for (const argv of [
    ["promote"],
    ["promote", "f32"],
    ["promote", "f32", "f16", "i8"],
    ["promote", "f32", "f16", "--a-rank", "-1"],
    ["promote", "f32", "f16", "--a-rank", "x"],
    ["promote", "--table", "f32"],
    ["promote", "--table", "--a-rank", "0"],
    ["promote", "f32", "f16", "--scalar"],
  ]) {
    const r = await run(...argv);
    assert.equal(r.code, 2, argv.join(" "));
    assert.match(r.err, /Run "tensorcast help promote" for usage\./);
  }
});

test("promote is listed and has help", async () => {
  assert.match(await ok("--help"), /promote\s+show OpenVINO ConvertPromoteTypes' common type/);
  const help = await ok("help", "promote");
  assert.match(help, /^Usage: tensorcast promote <type> <type>/);
  assert.equal(await ok("promote", "--help"), help);
});

/** Parses the text table into cells keyed "row column". */
function parseTable(text: string): { heading: string; cells: Map<string, string>; legend: string[] } {
  const lines = text.trimEnd().split("\n");
  const blank = lines.indexOf("");
  const [header, ...rows] = lines.slice(1, blank).map((l) => l.trim().split(/\s+/));
  assert.equal(header.length, 18);
  assert.equal(rows.length, 18);
  const cells = new Map<string, string>();
  for (const [label, ...row] of rows) row.forEach((cell, c) => cells.set(`${label} ${header[c]}`, cell));
  return { heading: lines[0], cells, legend: lines.slice(blank + 1) };
}

const SHORT: Record<string, string> = { boolean: "bool", f8e4m3: "e4m3", f8e5m2: "e5m2" };
const TAG: Record<string, string> = {
  [PROMOTION_ERRORS.intToFloat]: "!F", [PROMOTION_ERRORS.unsignedToSigned]: "!U",
  [PROMOTION_ERRORS.unsupportedPair]: "!X", [PROMOTION_ERRORS.pytorchScalar]: "!P",
};

function expected(a: string, b: string, opts: PromoteOptions): string {
  try {
    const name = promoteTypes(a, b, opts).name;
    return SHORT[name] ?? name;
  } catch (e) {
    const m = (e as Error).message;
    return Object.entries(TAG).find(([sentence]) => m.includes(sentence))![1];
  }
}

test("promote --table prints promoteTypes for all 324 pairs, in every mode", async () => {
  for (const flags of [[], ["--unsafe"], ["--pytorch"], ["--pytorch", "--unsafe"], ["--unsafe", "--u64-target", "i64"]]) {
    const { heading, cells, legend } = parseTable(await ok("promote", "--table", ...flags));
    const opts: PromoteOptions = {
      promoteUnsafe: flags.includes("--unsafe"),
      pytorchScalarPromotion: flags.includes("--pytorch"),
      u64IntegerPromotionTarget: flags.includes("i64") ? "i64" : "f32",
      aRank: 0,
      bRank: 1,
    };
    assert.equal(
      heading,
      `ConvertPromoteTypes-14: promote_unsafe=${opts.promoteUnsafe}, pytorch_scalar_promotion=${opts.pytorchScalarPromotion}, ` +
        `u64_integer_promotion_target=${opts.u64IntegerPromotionTarget}`,
    );
    for (const a of PROMOTE_TYPES) {
      for (const b of PROMOTE_TYPES) {
        assert.equal(cells.get(`${SHORT[a] ?? a} ${SHORT[b] ?? b}`), expected(a, b, opts), `${flags.join(" ")}: ${a} ${b}`);
      }
    }
    assert.match(legend[0], opts.pytorchScalarPromotion ? /rows: the rank-0 input; columns: the input of rank >= 1/ : /rows: input 0; columns: input 1/);
    assert.deepEqual(legend.slice(2), Object.entries(TAG).map(([sentence, tag]) => `${tag}  ${sentence}`).sort(byTag));
  }
  // Spot checks against the documented tables.
  const safe = parseTable(await ok("promote", "--table")).cells;
  assert.deepEqual(["u4 i4", "u8 e4m3", "f16 bf16", "u1 i4", "e4m3 f16"].map((k) => safe.get(k)), ["!U", "!F", "!X", "i4", "f16"]);
  const torch = parseTable(await ok("promote", "--table", "--pytorch")).cells;
  assert.deepEqual(["u64 i32", "bf16 f16", "u4 u1", "e5m2 e4m3"].map((k) => torch.get(k)), ["i32", "f16", "!P", "e4m3"]);
});

function byTag(x: string, y: string): number {
  const order = ["!F", "!U", "!X", "!P"];
  return order.indexOf(x.slice(0, 2)) - order.indexOf(y.slice(0, 2));
}

test("promote --table --json", async () => {
  const report = JSON.parse(await ok("promote", "--table", "--json", "--unsafe"));
  assert.deepEqual(report.types, [...PROMOTE_TYPES]);
  assert.equal(report.cells.length, 18);
  assert.equal(report.cells[PROMOTE_TYPES.indexOf("f16")][PROMOTE_TYPES.indexOf("bf16")], "f32");
  assert.equal(report.cells[PROMOTE_TYPES.indexOf("u64")][PROMOTE_TYPES.indexOf("i8")], "f32");
  assert.equal(report.errors["!F"], PROMOTION_ERRORS.intToFloat);
  assert.equal(report.promoteUnsafe, true);
  assert.equal(report.u64IntegerPromotionTarget, "f32");
});
