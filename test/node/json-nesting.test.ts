/**
 * Every JSON file tensorcast reads goes through one reader (src/node/io/json.ts) with the
 * safetensors header's nesting limit, 127: an index.json whose metadata nests 200,000 arrays deep
 * is INVALID_DATA (exit 1) for inspect, convert and diff, not a stack overflow (exit 70).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { firstTooDeep, parseJsonFile } from "../../src/node/io/json.js";
import { MAX_JSON_DEPTH } from "../../src/io/safetensors/json.js";
import { readCheckpoint } from "../../src/node/io/checkpoint.js";
import { cli, randomFloat32, rejectsCode, safetensorsBytes, scratch } from "./helpers.js";

const dir = scratch();

const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;

/** A one-shard checkpoint whose index's metadata holds `metadata` (JSON text). */
function checkpoint(name: string, metadata: string): string {
  const folder = join(dir, name);
  mkdirSync(folder, { recursive: true });
  const shard = "model-00001-of-00001.safetensors";
  writeFileSync(join(folder, shard), safetensorsBytes([{ name: "w", dtype: "float32", shape: [4], bytes: randomFloat32(4, 1, 2) }]));
  writeFileSync(join(folder, "model.safetensors.index.json"), `{"metadata": {"deep": ${metadata}}, "weight_map": {"w": "${shard}"}}`);
  return folder;
}

test("firstTooDeep counts arrays and objects outside strings, once per bracket", () => {
  assert.equal(firstTooDeep(nested(127)), -1);
  assert.equal(firstTooDeep(nested(128)), 127);
  assert.equal(firstTooDeep('{"a": {"b": [1]}}', 2), 12);
  assert.equal(firstTooDeep('{"a": {"b": [1]}}', 3), -1);
  // Brackets in strings, and an escaped quote that does not end one.
  assert.equal(firstTooDeep(`["${"[".repeat(300)}", "\\"[[[[", {}]`, 2), -1);
  assert.equal(firstTooDeep('["\\\\", [[]]]', 2), 8);
});

test("parseJsonFile: 127 levels parse, 128 and 200,000 are INVALID_DATA naming the file", () => {
  assert.equal(MAX_JSON_DEPTH, 127);
  assert.deepEqual(parseJsonFile('{"a": [1, "]"]}', "f.json"), { a: [1, "]"] });
  assert.ok(Array.isArray(parseJsonFile(nested(127), "f.json")));
  for (const depth of [128, 200_000]) {
    assert.throws(() => parseJsonFile(nested(depth), "f.json"), (e: Error & { code?: string }) => {
      assert.equal(e.code, "INVALID_DATA");
      assert.match(e.message, /^f\.json: arrays and objects nested more than 127 deep \(at character 127\)/);
      return true;
    });
  }
  assert.throws(() => parseJsonFile("{", "f.json"), (e: Error & { code?: string }) => e.code === "INVALID_DATA" && /^f\.json: is not valid JSON/.test(e.message));
});

test("an index whose metadata nests 200,000 arrays deep: inspect, convert and diff exit 1 with INVALID_DATA", async () => {
  const deep = checkpoint("deep", nested(200_000));
  await rejectsCode(readCheckpoint(deep), "INVALID_DATA", /model\.safetensors\.index\.json: arrays and objects nested more than 127 deep/);
  for (const argv of [["inspect", deep], ["convert", deep, "--to", "float16", "-o", join(dir, "out-deep")], ["diff", deep, deep]]) {
    const r = await cli(argv);
    assert.equal(r.code, 1, `${argv[0]}: ${r.err}`);
    assert.match(r.err, /nested more than 127 deep .*\(code INVALID_DATA\)/, argv[0]);
  }
});

test("metadata whose value nests 125 arrays (127 levels with the index object and metadata) converts and is kept", async () => {
  // The index object, metadata's object and "deep"'s 125 arrays: 127 levels, the most allowed.
  const folder = checkpoint("deepest-allowed", nested(125));
  const out = join(dir, "out-allowed");
  const r = await cli(["convert", folder, "--to", "float16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  const index = JSON.parse(readFileSync(join(out, "model.safetensors.index.json"), "utf8")) as { metadata: { deep: unknown } };
  assert.equal(firstTooDeep(JSON.stringify(index.metadata.deep), 124), 124);
  assert.equal(firstTooDeep(JSON.stringify(index.metadata.deep), 125), -1);
  const over = checkpoint("one-too-deep", nested(126));
  assert.equal((await cli(["inspect", over])).code, 1);
});
