/**
 * onnxruntime-node as a peer, in a child process of fuzz.test.ts (a native crash of onnxruntime on
 * a hostile file then costs one check, not the suite).
 *
 * Usage: node ort-worker.js LIST FROM TO, LIST a JSON file of [kind, path, dataType].
 * Prints "S <index>" before each check and "R <json>" after it.
 * - "model": InferenceSession.create on the file (graph optimizations off).
 * - "tensor": the .pb's bytes become the one initializer of a model (renamed "x" by appending a
 *   name field, which protobuf's last-one-wins rule applies), read by an Identity node, so that
 *   onnxruntime parses the TensorProto itself; its output's bytes are returned for the types
 *   onnxruntime-node hands back as typed arrays.
 */
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { W } from "../support/protobuf.js";
import { ortData } from "../support/ort.js";
import { digest } from "./digest.js";

const OPTIONS: ort.InferenceSession.SessionOptions = { graphOptimizationLevel: "disabled", enableCpuMemArena: false, logSeverityLevel: 4 };

export interface OrtVerdict {
  readonly index: number;
  /** "ok" or onnxruntime's error, first line. */
  readonly load: string;
  /** For a tensor: its bytes as onnxruntime read them, when its type comes back as a typed array. */
  readonly data?: string;
}

/** A model whose initializer is `tensor` (serialized), output through Identity as its `dataType`. */
function wrap(tensor: Uint8Array, dataType: number): Uint8Array {
  const renamed = new W().append(tensor).len(8, "x");
  const type = new W().len(1, new W().int(1, dataType));
  return new W()
    .int(1, 10)
    .len(8, new W().len(1, "").int(2, 21))
    .len(7, new W()
      .len(1, new W().len(1, "x").len(2, "y").len(4, "Identity"))
      .len(2, "wrap")
      .len(5, renamed)
      .len(12, new W().len(1, "y").len(2, type)))
    .bytes();
}

/** onnxruntime's message: its first line, the C++ signature it often starts with cut from the middle. */
const firstLine = (e: unknown): string => {
  const line = String((e as Error)?.message ?? e).split("\n")[0];
  return line.length > 400 ? `${line.slice(0, 100)} … ${line.slice(-280)}` : line;
};

async function check(kind: string, path: string, dataType: number): Promise<Omit<OrtVerdict, "index">> {
  const bytes = readFileSync(path);
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(kind === "model" ? bytes : wrap(bytes, dataType), OPTIONS);
  } catch (e) {
    return { load: firstLine(e) };
  }
  try {
    if (kind === "model") return { load: "ok" };
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await session.run({});
    } catch (e) {
      return { load: `run: ${firstLine(e)}` };
    }
    const y = out.y;
    const data = ortData(y) as unknown;
    if (ArrayBuffer.isView(data)) return { load: "ok", data: digest(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) };
    return { load: "ok" };
  } finally {
    await session.release();
  }
}

const [listPath, from, to] = process.argv.slice(2);
const list = JSON.parse(readFileSync(listPath, "utf8")) as [string, string, number][];
for (let i = Number(from); i < Number(to); i++) {
  process.stdout.write(`S ${i}\n`);
  const [kind, path, dataType] = list[i];
  process.stdout.write(`R ${JSON.stringify({ index: i, ...(await check(kind, path, dataType)) })}\n`);
}
