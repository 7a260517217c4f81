/**
 * Inputs made of several files, for the tests that no output ever lands on one of them
 * (test/node/output-is-input.test.ts, test/fuzz/paths.ts): a model with an external data file, and
 * a two-shard checkpoint folder with its index and a config.json.
 */
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tensor } from "../../src/index.js";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { convertFile } from "../../src/node/index.js";
import { randomFloat32, safetensorsBytes } from "../node/helpers.js";
import { modelOf } from "./onnx-model.js";

/**
 * `dir/in.onnx` (Y = MatMul(X, W) + B) whose W (2048 bytes) is in `dir/in.data` and B inline.
 * @example const { model, data } = await modelWithExternalData(dir)
 */
export async function modelWithExternalData(dir: string, name = "in"): Promise<{ model: string; data: string }> {
  const m = modelOf({
    inputs: [{ name: "X", elemType: 1, shape: [1, 16] }],
    outputs: [{ name: "Y", elemType: 1, shape: [1, 32] }],
    opset: 17, irVersion: 8,
    nodes: [{ opType: "MatMul", inputs: ["X", "W"], outputs: ["XW"] }, { opType: "Add", inputs: ["XW", "B"], outputs: ["Y"] }],
  });
  m.graph.initializers.push(
    { name: "W", tensor: Tensor.fromBytes(randomFloat32(512, 1), "float32", [16, 32]) },
    { name: "B", tensor: Tensor.fromBytes(randomFloat32(32, 2), "float32", [32]) },
  );
  const plain = join(dir, `.${name}.plain.onnx`);
  writeFileSync(plain, encodeModel(m));
  const model = join(dir, `${name}.onnx`);
  await convertFile(plain, model, { to: "float32", names: ["W"], externalData: `${name}.data` });
  unlinkSync(plain);
  return { model, data: join(dir, `${name}.data`) };
}

export const SHARD_NAMES = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
export const INDEX_NAME = "model.safetensors.index.json";

/** A two-shard checkpoint in `folder` (created): two shards, the index, a config.json. */
export function shardedCheckpoint(folder: string): void {
  mkdirSync(folder, { recursive: true });
  const map: Record<string, string> = {};
  SHARD_NAMES.forEach((s, i) => {
    const name = `layer${i}.weight`;
    writeFileSync(join(folder, s), safetensorsBytes([{ name, dtype: "float32", shape: [8, 4], bytes: randomFloat32(32, 10 + i) }]));
    map[name] = s;
  });
  writeFileSync(join(folder, INDEX_NAME), JSON.stringify({ metadata: { total_size: 256 }, weight_map: map }));
  writeFileSync(join(folder, "config.json"), '{"model_type": "test"}\n');
}

/**
 * What an entry is, to compare before and after: its type, and a regular file's bytes, a link's
 * target, a folder's entries (recursively), each as a digest.
 */
export function snapshot(path: string): string {
  let s;
  try {
    s = lstatSync(path);
  } catch {
    return "missing";
  }
  if (s.isSymbolicLink()) return `link -> ${readlinkSync(path)}`;
  if (s.isFile()) return `file ${createHash("sha256").update(readFileSync(path)).digest("hex")} ino ${s.ino}`;
  if (s.isDirectory()) return `dir [${readdirSync(path).sort().map((e) => `${e}: ${snapshot(join(path, e))}`).join(", ")}]`;
  return s.isFIFO() ? "fifo" : s.isSocket() ? "socket" : s.isCharacterDevice() ? `chardev ${s.rdev}` : s.isBlockDevice() ? "blockdev" : "other";
}
