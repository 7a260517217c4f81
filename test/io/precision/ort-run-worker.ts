/**
 * Runs models in onnxruntime-node for precision.test.ts, in a child process of its own: a native
 * crash (onnxruntime 1.30 was seen to abort on a float16 transformer graph) then fails one check
 * with its exit status instead of taking the test runner down.
 *
 * Usage: node ort-run-worker.js JOB.json, JOB a list of { path, feeds, options }. Prints one line
 * per model: "R " + JSON of { ok: true, outputs } or { ok: false, error }, outputs as float64
 * numbers (float16 decoded from its bits by tensorcast's Cast).
 */
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { cast } from "../../../src/ops/cast.js";
import { Tensor } from "../../../src/tensor.js";
import { float16Feed, ortData } from "../../support/ort.js";

export interface RunFeed {
  name: string;
  type: "float32" | "float16" | "int64" | "bool";
  dims: number[];
  values: number[];
}

export interface RunJob {
  path: string;
  feeds: RunFeed[];
  /** Optimisation level ("disabled", "basic", "extended", "all"; default "all", onnxruntime's default). */
  level?: "disabled" | "basic" | "extended" | "all";
  /** Session config entries (e.g. optimization.disable_specified_optimizers). */
  config?: Record<string, string>;
  /** Create the session from the path, not the bytes: onnxruntime then finds external data beside it. */
  byPath?: boolean;
  /** Where onnxruntime saves the graph as optimised (to see which rewrites ran). */
  optimizedPath?: string;
  /** Also return each float32 output's bit patterns (JSON numbers lose -0 and NaN payloads). */
  bits?: boolean;
}

export type RunResult =
  | { ok: true; outputs: Record<string, { type: string; dims: number[]; values: number[]; bits?: number[] }> }
  | { ok: false; error: string };

function feedOf(f: RunFeed): ort.Tensor {
  switch (f.type) {
    case "float32":
      return new ort.Tensor("float32", Float32Array.from(f.values), f.dims);
    case "float16": {
      const bits = cast(Tensor.fromValues(f.values, "float32", f.dims), "float16").data as Uint16Array;
      return float16Feed(bits, f.dims);
    }
    case "int64":
      return new ort.Tensor("int64", BigInt64Array.from(f.values.map(BigInt)), f.dims);
    case "bool":
      return new ort.Tensor("bool", Uint8Array.from(f.values), f.dims);
  }
}

function valuesOf(t: ort.Tensor): number[] {
  const data = ortData(t);
  if (t.type === "float16") return Array.from(cast(Tensor.fromStorage(data as Uint16Array, "float16", [data.length]), "float32").data as Float32Array);
  return Array.from(data as ArrayLike<number | bigint>, Number);
}

async function run(job: RunJob): Promise<RunResult> {
  try {
    const options: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: job.level ?? "all", logSeverityLevel: 3 };
    if (job.config) (options as { extra?: unknown }).extra = { session: {}, optimization: {}, ...nest(job.config) };
    if (job.optimizedPath) options.optimizedModelFilePath = job.optimizedPath;
    const session = job.byPath ? await ort.InferenceSession.create(job.path, options) : await ort.InferenceSession.create(readFileSync(job.path), options);
    const feeds: Record<string, ort.Tensor> = {};
    for (const f of job.feeds) feeds[f.name] = feedOf(f);
    const out = await session.run(feeds);
    const outputs: Record<string, { type: string; dims: number[]; values: number[]; bits?: number[] }> = {};
    for (const [name, t] of Object.entries(out)) {
      outputs[name] = { type: t.type, dims: [...t.dims], values: valuesOf(t) };
      if (job.bits && t.data instanceof Float32Array) outputs[name].bits = Array.from(new Uint32Array(t.data.buffer, t.data.byteOffset, t.data.length));
    }
    await session.release();
    return { ok: true, outputs };
  } catch (e) {
    return { ok: false, error: String((e as Error)?.message ?? e).split("\n")[0].slice(0, 400) };
  }
}

/** "a.b": "v" -> { a: { b: "v" } }, the shape onnxruntime-common's `extra` takes. */
function nest(config: Record<string, string>): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const [k, v] of Object.entries(config)) {
    const dot = k.indexOf(".");
    (out[k.slice(0, dot)] ??= {})[k.slice(dot + 1)] = v;
  }
  return out;
}

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8")) as RunJob[];
for (const job of jobs) process.stdout.write(`R ${JSON.stringify(await run(job))}\n`);
