/**
 * The model over 2 GiB that the large external-data tests convert (the flat converter's in
 * onnx-external-large.test.ts, the whole-model pass's in io/precision/external-large.test.ts):
 * a, b: float32 [2^28] (1 GiB each) at 0 and 1 GiB of a sparse side file, random 64 KiB regions
 * in their holes; c: float32 [2^18] (1 MiB) at 2 GiB. Sparse, so it costs the disk only what is
 * written.
 */
import { closeSync, existsSync, ftruncateSync, openSync, statfsSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { encodeModel } from "../../src/io/onnx/encode.js";
import { WireReader } from "../../src/io/onnx/wire.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { randomBytes } from "./helpers.js";

export const GiB = 2 ** 30;
/** Elements of a and of b. */
export const A = 2 ** 28;
/** Elements of c. */
export const C = 2 ** 18;
/** Where the random 64 KiB regions are in big.data: the starts, middles and ends of a and b. */
export const REGIONS = [0, GiB / 2 + 12345 * 4, GiB - 65536, GiB, GiB + 4 * 87654321, 2 * GiB - 65536];

/** The bytes of region `i` (the rest of a and b is zeros). @example regionBytes(0).length // 65536 */
export function regionBytes(i: number): Uint8Array {
  return randomBytes(65536, 100 + i);
}

/**
 * Why a test that writes `need` bytes under `dir` must be skipped, or false when the disk has room.
 * @example test("...", { skip: diskSkip(dir, 3 * GiB, "this test writes 2 GiB") }, ...)
 */
export function diskSkip(dir: string, need: number, what: string): string | false {
  const s = statfsSync(dir);
  const free = s.bavail * s.bsize;
  return free < need && `the disk holding ${dir} has ${(free / GiB).toFixed(2)} GiB free; ${what} and needs ${need / GiB} GiB`;
}

function externalTensor(name: string, dims: number[], offset: number, length: number): Uint8Array {
  const w = new WireWriter();
  for (const d of dims) w.int64Field(1, d);
  w.uint32Field(2, 1);
  w.stringField(8, name);
  for (const [k, v] of [["location", "big.data"], ["offset", String(offset)], ["length", String(length)]]) w.fork(13).stringField(1, k).stringField(2, v).join();
  w.uint32Field(14, 1);
  return w.finish().slice();
}

/**
 * Writes dir/big.onnx (y_k = op(k) for k in a, b, c) and its sparse dir/big.data, unless big.onnx
 * is there already; returns big.onnx's path.
 * @example writeSparseModel(dir, c.bytes(), (n) => (n === "c" ? "Relu" : "Identity"))
 */
export function writeSparseModel(dir: string, c: Uint8Array, opOf: (name: string) => string): string {
  const path = join(dir, "big.onnx");
  if (existsSync(path)) return path;
  const fd = openSync(join(dir, "big.data"), "w");
  try {
    ftruncateSync(fd, 2 * GiB + 4 * C);
    REGIONS.forEach((at, i) => writeSync(fd, regionBytes(i), 0, 65536, at));
    writeSync(fd, c, 0, 4 * C, 2 * GiB);
  } finally {
    closeSync(fd);
  }
  const names = ["a", "b", "c"];
  const encoded = encodeModel({
    irVersion: 8, opsetImports: [{ domain: "", version: 17 }],
    graph: {
      name: "g", initializers: [], inputs: [],
      nodes: names.map((n) => ({ name: n, opType: opOf(n), domain: "", inputs: [n], outputs: [`y_${n}`], attributes: [] })),
      outputs: names.map((n) => ({ name: `y_${n}`, elemType: 1, shape: [n === "c" ? C : A] })),
    },
  });
  // The initializers' external references go into the graph message as it was encoded.
  const initializers = [externalTensor("a", [A], 0, GiB), externalTensor("b", [A], GiB, GiB), externalTensor("c", [C], 2 * GiB, 4 * C)];
  const r = new WireReader(encoded, "ModelProto");
  const w = new WireWriter(4096);
  for (let f = r.next(); f !== 0; f = r.next()) {
    const start = r.pos;
    if (f === 7) {
      w.fork(7).raw(r.bytes());
      for (const t of initializers) w.bytesField(5, t);
      w.join();
      continue;
    }
    r.skip();
    w.raw(new WireWriter().tag(f, r.wireType).finish());
    w.raw(encoded.subarray(start, r.pos));
  }
  writeFileSync(path, w.finish());
  return path;
}
