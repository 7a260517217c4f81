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
import type { OnnxFileTensor } from "../../src/node/io/onnx.js";
import type { TensorFile } from "../../src/node/io/tensors.js";
import { externalTensor, withInitializers } from "./external-model.js";
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

const entries = (offset: number, length: number): [string, string][] => [["location", "big.data"], ["offset", String(offset)], ["length", String(length)]];

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
  const initializers = [
    externalTensor("a", [A], 1, entries(0, GiB)), externalTensor("b", [A], 1, entries(GiB, GiB)), externalTensor("c", [C], 1, entries(2 * GiB, 4 * C)),
  ];
  writeFileSync(path, withInitializers(encoded, initializers));
  return path;
}

/**
 * Each tensor of an opened .onnx as [name, type, "location@offset+length"] (undefined when inline).
 * @example layoutOf(await openTensorFile("out.onnx"))[0]  // ["a", "float32", "out.onnx.data@0+1073741824"]
 */
export function layoutOf(file: TensorFile): [string, string, string | undefined][] {
  return file.tensors.map((t) => {
    const x = (t as OnnxFileTensor).external;
    return [t.name, t.dtype.name, x && `${x.location}@${x.offset}+${x.length}`];
  });
}
