/**
 * The official ONNX backend node tests (libonnx-testdata, onnx 1.12) whose inputs are all float32,
 * with their first data set: read by backend-sweep.test.ts and bench/nchwc-sweep.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeModel } from "../../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../../src/io/onnx/tensorproto.js";
import type { RunJob } from "./ort-run.js";

/** Where Debian's libonnx-testdata puts the node tests. */
export const BACKEND_TESTS = "/usr/share/libonnx-testdata/data/node";
const ROOT = BACKEND_TESTS;

/** One test: its folder name, the inputs of test_data_set_0 and the outputs it expects. */
export interface BackendTest {
  name: string;
  feeds: RunJob["feeds"];
  expected: { name: string; values: number[] }[];
}

/**
 * Every test whose graph inputs (initializers aside) are all float32 and whose data decode.
 * @example loadBackendTests().find((t) => t.name === "test_relu")?.feeds[0].dims  // [3, 4, 5]
 */
export function loadBackendTests(): BackendTest[] {
  const out: BackendTest[] = [];
  for (const name of readdirSync(ROOT).sort()) {
    const dir = join(ROOT, name);
    const set = join(dir, "test_data_set_0");
    if (!existsSync(join(dir, "model.onnx")) || !existsSync(set)) continue;
    let model;
    try {
      model = decodeModel(readFileSync(join(dir, "model.onnx")));
    } catch {
      continue;
    }
    const inputs = model.graph.inputs.filter((v) => !model.graph.initializers.some((t) => t.name === v.name));
    if (inputs.length === 0 || !inputs.every((v) => v.elemType === 1)) continue;
    const files = readdirSync(set).sort();
    const feeds: RunJob["feeds"] = [];
    const expected: BackendTest["expected"] = [];
    let ok = true;
    for (const f of files) {
      try {
        const t = decodeTensorProto(readFileSync(join(set, f))).tensor;
        if (t.dtype.kind === "string" || t.dtype.kind === "complex") ok = false;
        const values = Array.from(t.toValues() as ArrayLike<number | bigint | boolean>, Number);
        const k = Number(/_(\d+)\.pb$/.exec(f)?.[1] ?? -1);
        if (f.startsWith("input_")) feeds.push({ name: inputs[k]?.name ?? "", type: "float32", dims: [...t.shape], values });
        else expected.push({ name: model.graph.outputs[k]?.name ?? "", values });
      } catch {
        ok = false;
      }
    }
    if (!ok || feeds.length !== inputs.length) continue;
    out.push({ name, feeds, expected });
  }
  return out;
}

