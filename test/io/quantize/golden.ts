/**
 * The golden files of onnxruntime 1.30.0's Python quantizers (test/fixtures/quantize/, made by its
 * make.py): reading them, comparing bytes, and running a model in onnxruntime-node.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as ort from "onnxruntime-node";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";

/** build/test/io/quantize/ -> test/fixtures/quantize. */
export const GOLDEN = join(fileURLToPath(new URL("../../../../", import.meta.url)), "test", "fixtures", "quantize");

/** A golden file's bytes. */
export function golden(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(GOLDEN, name)));
}

/** A little-endian .npy file of float32 or int64 written by NumPy (version 1 header). */
export function readNpy(name: string): { data: Float32Array | BigInt64Array; shape: number[] } {
  const b = golden(join("io", name));
  const headerLength = b[8] | (b[9] << 8);
  const header = new TextDecoder().decode(b.subarray(10, 10 + headerLength));
  const shape = /'shape': \(([^)]*)\)/.exec(header)![1].split(",").filter((s) => s.trim() !== "").map(Number);
  const body = b.slice(10 + headerLength);
  const data = header.includes("'<f4'") ? new Float32Array(body.buffer) : new BigInt64Array(body.buffer);
  return { data, shape };
}

/** The offset of the first byte where `a` and `b` differ, -1 when equal. */
export function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** Asserts equal bytes, naming the first differing offset. */
export function assertSameBytes(ours: Uint8Array, theirs: Uint8Array, what: string): void {
  const at = firstDifference(ours, theirs);
  assert.equal(at, -1, `${what}: first differing byte at ${at} (ours ${ours.length} bytes, onnxruntime's ${theirs.length})`);
}

/** Runs a model of one input in onnxruntime-node (CPU) and returns its first output. */
export async function runModel(model: Uint8Array, feeds: Record<string, ort.Tensor>): Promise<ort.Tensor> {
  const session = await ort.InferenceSession.create(model, { executionProviders: ["cpu"] });
  try {
    const out = await session.run(feeds);
    return out[session.outputNames[0]];
  } finally {
    await session.release();
  }
}

/** The golden inputs of model.onnx (ids) and conv.onnx (x) as onnxruntime feeds. */
export function goldenFeeds(conv: boolean): Record<string, ort.Tensor> {
  if (conv) {
    const x = readNpy("x.npy");
    return { x: new ort.Tensor("float32", x.data as Float32Array, x.shape) };
  }
  const ids = readNpy("ids.npy");
  return { ids: new ort.Tensor("int64", ids.data as BigInt64Array, ids.shape) };
}

/** sqrt(sum (got - want)^2 / sum want^2): an output's error relative to its size. */
export function relativeL2(got: Float32Array, want: Float32Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < want.length; i++) {
    num += (got[i] - want[i]) ** 2;
    den += want[i] ** 2;
  }
  return Math.sqrt(num / den);
}

/**
 * A model with its main graph's nodes put in the order onnxruntime's ONNXModel.topological_sort
 * gives them (quantize_dynamic saves through save_model_to_file, which sorts first; ONNXQuantizer
 * as transformers.js' quantize.py runs it does not): nodes without inputs first, in graph order;
 * then those freed by the initializers and graph inputs taken in sorted name order; then, breadth
 * first, those freed by each sorted node's outputs. An input counts once per occurrence, an empty
 * one not at all; subgraphs are left as they are.
 */
export function ortTopologicalSort(bytes: Uint8Array): Uint8Array {
  const model = PbMessage.parse(bytes, "ModelProto");
  const graph = model.sub(7, "GraphProto")!;
  const fields = graph.all(1);
  const nodes = graph.subs(1, "NodeProto");
  const deps = nodes.map(() => 0);
  const readers = new Map<string, number[]>();
  const sorted: number[] = [];
  nodes.forEach((n, i) => {
    const inputs = n.strings(1).filter((s) => s !== "");
    deps[i] = inputs.length;
    if (inputs.length === 0) sorted.push(i);
    for (const s of inputs) readers.set(s, [...(readers.get(s) ?? []), i]);
  });
  const free = (name: string): void => {
    for (const i of readers.get(name) ?? []) if (--deps[i] === 0) sorted.push(i);
  };
  // Python's sort of ASCII names is JavaScript's; duplicates are taken once.
  const names = [...graph.subs(5, "TensorProto").map((t) => t.string(8)), ...graph.subs(11, "ValueInfoProto").map((v) => v.string(1))].sort();
  names.forEach((s, k) => {
    if (k === 0 || names[k - 1] !== s) free(s);
  });
  for (let k = 0; k < sorted.length; k++) for (const s of nodes[sorted[k]].strings(2)) free(s);
  assert.equal(sorted.length, nodes.length, "the graph is not a DAG");
  let k = 0;
  graph.fields = graph.fields.map((f) => (f.no === 1 ? fields[sorted[k++]] : f));
  return model.encode(bytes.length + 4096);
}

let int8Probe: Promise<string | undefined> | undefined;

/**
 * Why this machine's onnxruntime-node does not reproduce the recorded outputs (out_*.npy) of models
 * with int8 weights, or undefined when it does. Those recordings come from onnxruntime on a CPU
 * whose uint8 x int8 MatMulInteger is exact; on an x86-64 with AVX2 and no VNNI, onnxruntime sums
 * pairs of u8 * s8 products in saturating 16-bit lanes (vpmaddubsw), so the same file runs to other
 * values there, at times far from the float model's. The probe is the committed gemm_int8.onnx run
 * on its committed inputs.
 */
export function int8OutputsDiffer(): Promise<string | undefined> {
  int8Probe ??= (async () => {
    const x = readNpy("gx.npy");
    const w = readNpy("gwdyn.npy");
    const feeds = { x: new ort.Tensor("float32", x.data as Float32Array, x.shape), wdyn: new ort.Tensor("float32", w.data as Float32Array, w.shape) };
    const got = (await runModel(golden("gemm_int8.onnx"), feeds)).data as Float32Array;
    const recorded = readNpy("out_gemm_int8.npy").data as Float32Array;
    const off = got.findIndex((v, i) => v !== recorded[i]);
    return off < 0 ? undefined
      : `onnxruntime-node here runs gemm_int8.onnx to ${got[off]} at ${off} where the recording has ${recorded[off]}: ` +
        "its u8 x s8 MatMulInteger saturates on this CPU (AVX2 without VNNI)";
  })();
  return int8Probe;
}

/**
 * A model's output against the recording `recorded` (out_*.npy): always equal to onnxruntime-node's
 * run of the golden file `goldenFile` in this process (the same kernels), and equal to the recording
 * unless the model has int8 weights and int8OutputsDiffer says this CPU runs those apart.
 */
export async function assertRecordedOutput(
  got: Float32Array, goldenFile: string, feeds: Record<string, ort.Tensor>, recorded: string, int8Weights: boolean,
): Promise<void> {
  const theirs = (await runModel(golden(goldenFile), feeds)).data as Float32Array;
  assert.deepEqual([...got], [...theirs], `the output of ${goldenFile} under onnxruntime-node`);
  if (int8Weights && (await int8OutputsDiffer()) !== undefined) return;
  assert.deepEqual([...got], [...(readNpy(recorded).data as Float32Array)], `the recording ${recorded}`);
}
