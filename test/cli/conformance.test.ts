import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli as run } from "../support/cli.js";
import { mkdtempSync, cpSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";


const FIXTURES = fileURLToPath(new URL("../../../test/fixtures/onnx-node/", import.meta.url));

test("conformance prints one row per case and the totals; exit 0 when nothing fails", async () => {
  const r = await run("conformance", FIXTURES, "--filter", "^test_cast_(FLOAT_to_FLOAT16|FLOAT_to_FLOAT4E2M1)$");
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^test\s+result\s+detail\n/);
  assert.match(r.out, /test_cast_FLOAT_to_FLOAT16\s+pass/);
  assert.match(r.out, /2 cases: 2 passed, 0 failed, 0 expected differences, 0 not implemented\n$/);
});

test("conformance --json gives rows and totals", async () => {
  const r = await run("conformance", FIXTURES, "--filter", "^test_cast_FLOAT_to_DOUBLE$", "--json");
  assert.equal(r.code, 0, r.err);
  const json = JSON.parse(r.out) as { results: { test: string; outcome: string }[]; totals: Record<string, number> };
  assert.deepEqual(json.results, [{ test: "test_cast_FLOAT_to_DOUBLE", outcome: "pass" }]);
  assert.equal(json.totals.pass, 1);
});

test("a case whose expected output is wrong fails with the first differing element, exit 1", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-conf-"));
  const folder = join(dir, "test_cast_FLOAT_to_FLOAT16");
  cpSync(join(FIXTURES, "test_cast_FLOAT_to_FLOAT16"), folder, { recursive: true });
  // A float16 TensorProto [3, 4] whose raw_data says 0x3c00 (1.0) twelve times: not the real answer.
  const raw = new Uint8Array(24);
  for (let i = 0; i < 12; i++) raw[2 * i + 1] = 0x3c;
  const pb = new Uint8Array([0x0a, 0x02, 0x03, 0x04, 0x10, 0x0a, 0x4a, 24, ...raw]);
  writeFileSync(join(folder, "test_data_set_0", "output_0.pb"), pb);
  const r = await run("conformance", dir);
  assert.equal(r.code, 1);
  assert.match(r.out, /test_cast_FLOAT_to_FLOAT16\s+fail\s+test_data_set_0 output 0: \d+ of 12 differ; first element 0: ours 0x[0-9a-f]{4} \([^)]*\), expected 0x3c00 \(1\)/);
  assert.match(r.out, /1 cases: 0 passed, 1 failed/);
});

test("operators not implemented yet are reported as such, never as passes", async () => {
  const r = await run("conformance", FIXTURES, "--filter", "^test_reshape_one_dim$");
  assert.match(r.out, /test_reshape_one_dim\s+(not implemented|pass)/);
  assert.doesNotMatch(r.out, /0 passed, 0 failed, 0 expected differences, 0 not implemented/);
});

test("conformance usage errors exit 2; a missing directory exits 1", async () => {
  assert.equal((await run("conformance")).code, 2);
  const bad = await run("conformance", FIXTURES, "--filter", "(");
  assert.equal(bad.code, 2);
  assert.match(bad.err, /--filter "\(" is not a regular expression/);
  const missing = await run("conformance", "/nonexistent/dir");
  assert.equal(missing.code, 1);
  assert.match(missing.err, /\/nonexistent\/dir is not a directory/);
});
