/**
 * Bit-for-bit tensor comparison for conformance tests, where the only tolerance is the one the
 * backend tests themselves need: any NaN code of a type equals any other (numpy and onnxruntime
 * choose different NaN codes; onnx.md 7).
 */
import { decodeFloat, type Tensor } from "../../index.js";
import { readCode } from "../../dtype/packing.js";
import { expectTensor } from "../../tensor.js";

export interface Difference {
  /** How many elements differ. */
  readonly count: number;
  /** A sentence naming the first differing element with both values. */
  readonly message: string;
}

/** undefined when equal; otherwise what differs first (type, shape, or the first element). */
export function compareTensors(actual: Tensor, expected: Tensor): Difference | undefined {
  expectTensor(actual, "compareTensors' actual tensor");
  expectTensor(expected, "compareTensors' expected tensor");
  if (actual.dtype !== expected.dtype) {
    return { count: actual.size, message: `data type ${actual.dtype.name}, expected ${expected.dtype.name}` };
  }
  if (actual.shape.join() !== expected.shape.join()) {
    return { count: actual.size, message: `shape [${actual.shape.join(", ")}], expected [${expected.shape.join(", ")}]` };
  }
  const t = actual.dtype;
  if (t.kind === "string") {
    const a = actual.data as string[];
    const e = expected.data as string[];
    let count = 0;
    let first = -1;
    a.forEach((s, k) => { if (s !== e[k]) { count++; if (first < 0) first = k; } });
    return count === 0 ? undefined
      : { count, message: `element ${first}: ours ${JSON.stringify(a[first])}, expected ${JSON.stringify(e[first])}` };
  }
  const ab = actual.bytes();
  const eb = expected.bytes();
  const width = t.packed ? 0 : (t.kind === "complex" ? t.bits / 2 : t.bits) / 8;
  const count = t.kind === "complex" ? 2 * actual.size : actual.size;
  const code = (bytes: Uint8Array, i: number): bigint => {
    if (t.packed) return BigInt(readCode(bytes, t.bits, i));
    let v = 0n;
    for (let b = width - 1; b >= 0; b--) v = (v << 8n) | BigInt(bytes[i * width + b]);
    return v;
  };
  const isNaNCode = (c: bigint): boolean => {
    if (t.kind !== "float" && t.kind !== "complex") return false;
    if (width === 8) return Number.isNaN(new Float64Array(new BigUint64Array([c]).buffer)[0]);
    if (width === 4) return Number.isNaN(new Float32Array(new Uint32Array([Number(c)]).buffer)[0]);
    return Number.isNaN(decodeFloat(t.format!, Number(c)));
  };
  const digits = t.packed ? Math.ceil(t.bits / 4) : 2 * width;
  const hex = (c: bigint): string => `0x${c.toString(16).padStart(digits, "0")}`;
  const ours = actual.toValues();
  const theirs = expected.toValues();
  let differing = 0;
  let message = "";
  for (let i = 0; i < count; i++) {
    const a = code(ab, i);
    const e = code(eb, i);
    if (a === e || (isNaNCode(a) && isNaNCode(e))) continue;
    if (differing++ === 0) {
      const k = t.kind === "complex" ? i >> 1 : i;
      message = `element ${k}: ours ${hex(a)} (${String(ours[k])}), expected ${hex(e)} (${String(theirs[k])})`;
    }
  }
  return differing === 0 ? undefined : { count: differing, message: `${differing} of ${count} differ; first ${message}` };
}
