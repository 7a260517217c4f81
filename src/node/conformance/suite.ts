/**
 * Runs ONNX backend node-test folders (model.onnx + test_data_set_N/input_K.pb, output_K.pb) through
 * tensorcast's own reader and runner, and compares every output bit for bit.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  TensorcastError, decodeModel, decodeTensorProto, opsetVersion, retag, runModel, type OnnxModel, type Tensor, type ValueInfo,
} from "../../index.js";
import { compareTensors } from "./compare.js";
import { expectedDifference } from "./expected.js";
import { expectPath } from "../args.js";
import { describe } from "../../args.js";

export type Outcome = "pass" | "fail" | "expected difference" | "not implemented";

export interface CaseResult {
  readonly test: string;
  readonly outcome: Outcome;
  /** For anything but a pass: the first difference, the reason, or the error. */
  readonly detail?: string;
}

const UINT16 = 4;
const BFLOAT16 = 16;

/** The test folders under `dir` (or `dir` itself when it is one), sorted, optionally filtered. */
export function findCases(dir: string, filter?: RegExp): string[] {
  expectPath(dir, "findCases' folder");
  if (filter !== undefined && !(filter instanceof RegExp)) throw new TensorcastError("INVALID_ATTRIBUTE", `findCases' filter must be a RegExp, got ${describe(filter)}`);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new TensorcastError("INVALID_DATA", `${dir} is not a directory`);
  }
  if (existsSync(join(dir, "model.onnx"))) return [dir];
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, "model.onnx")))
    .map((d) => d.name)
    .filter((name) => !filter || filter.test(name))
    .sort()
    .map((name) => join(dir, name));
}

/** Runs one test folder. Errors of tensorcast become a failure with the message, not a throw. */
export function runCase(folder: string): CaseResult {
  expectPath(folder, "runCase's folder");
  const test = folder.split(/[\\/]/).filter(Boolean).pop() ?? folder;
  let model: OnnxModel;
  try {
    model = decodeModel(readFileSync(join(folder, "model.onnx")));
  } catch (e) {
    return { test, outcome: "fail", detail: `model.onnx: ${message(e)}` };
  }
  const opset = opsetVersion(model, "") ?? 0;
  const sets = readdirSync(folder).filter((n) => n.startsWith("test_data_set_")).sort();
  if (sets.length === 0) return { test, outcome: "fail", detail: "no test_data_set_* folder" };
  const fed = model.graph.inputs.filter((v) => !model.graph.initializers.some((i) => i.name === v.name));
  for (const set of sets) {
    let detail: string | undefined;
    try {
      const inputs = readTensors(join(folder, set), "input", fed);
      const expected = readTensors(join(folder, set), "output", model.graph.outputs);
      const actual = runModel(model, inputs);
      for (let k = 0; k < expected.length && !detail; k++) {
        const diff = compareTensors(actual[k], expected[k]);
        if (diff) detail = `${set} output ${k}: ${diff.message}`;
      }
    } catch (e) {
      if (e instanceof TensorcastError && e.code === "NOT_IMPLEMENTED") {
        return { test, outcome: "not implemented", detail: e.message };
      }
      detail = `${set}: ${message(e)}`;
    }
    if (detail) {
      const known = expectedDifference(test, opset);
      return known ? { test, outcome: "expected difference", detail: `${known.reason}; ${detail}` } : { test, outcome: "fail", detail };
    }
  }
  return { test, outcome: "pass" };
}

/**
 * input_K.pb / output_K.pb in order. A file tagged UINT16 where the graph declares BFLOAT16 is
 * retagged: onnx 1.12's generator stored bfloat16 data that way (onnx.md 7); any other disagreement
 * with the graph's declared type is a failure.
 */
function readTensors(dir: string, prefix: string, declared: readonly ValueInfo[]): Tensor[] {
  const out: Tensor[] = [];
  for (let k = 0; existsSync(join(dir, `${prefix}_${k}.pb`)); k++) {
    let t = decodeTensorProto(readFileSync(join(dir, `${prefix}_${k}.pb`))).tensor;
    const want = declared[k]?.elemType;
    if (want && want !== t.dtype.onnx) {
      if (want === BFLOAT16 && t.dtype.onnx === UINT16) t = retag(t, "bfloat16");
      else {
        throw new TensorcastError(
          "INVALID_DATA",
          `${prefix}_${k}.pb holds ${t.dtype.name} but the graph declares ONNX type ${want} for "${declared[k].name}"`,
        );
      }
    }
    out.push(t);
  }
  if (out.length !== declared.length) {
    throw new TensorcastError("INVALID_DATA", `${dir}: ${out.length} ${prefix} files for ${declared.length} graph ${prefix}s`);
  }
  return out;
}

function message(e: unknown): string {
  return e instanceof TensorcastError ? `${e.message} (${e.code})` : e instanceof Error ? e.message : String(e);
}

/** Counts per outcome. */
export function totals(results: readonly CaseResult[]): Record<Outcome, number> {
  const t: Record<Outcome, number> = { pass: 0, fail: 0, "expected difference": 0, "not implemented": 0 };
  if (!Array.isArray(results)) throw new TensorcastError("INVALID_DATA", `totals takes an array of runCase results, got ${describe(results)}`);
  for (const r of results) {
    const outcome: unknown = typeof r === "object" && r !== null ? (r as { outcome?: unknown }).outcome : undefined;
    if (typeof outcome !== "string" || !Object.hasOwn(t, outcome)) throw new TensorcastError("INVALID_DATA", `totals: ${describe(r)} is not a runCase result (its outcome is ${describe(outcome)})`);
  }
  for (const r of results) t[r.outcome as Outcome]++;
  return t;
}
