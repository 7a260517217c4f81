/**
 * The float32 operators of DynamicQuantizeLinear's function body (ReduceMin, ReduceMax, Min, Max,
 * Sub, Div, Clip, Round, Identity), for the runner, so the official `_expanded` cases run the body
 * as written. Only what that body needs: float32 tensors, reductions over every axis, and
 * element-wise operands of one shape or a single element; anything else is NOT_IMPLEMENTED rather
 * than guessed. Each result is the exact operation rounded once to float32 (a double computed from
 * two float32 operands, then Math.fround: for + - * / that double rounding never differs from
 * rounding once). NaN propagates, as numpy's minimum / maximum do.
 */
import { TensorcastError } from "../../errors.js";
import { roundHalfEven } from "../../kernels/quant/arithmetic.js";
import { Tensor } from "../../tensor.js";
import type { OnnxNode } from "./model.js";

type Binary = (a: number, b: number) => number;

/** Math.min / Math.max propagate NaN and order -0 below +0, as IEEE minimum / maximum do. */
const BINARY: Readonly<Record<string, Binary>> = {
  Min: Math.min,
  Max: Math.max,
  Sub: (a, b) => a - b,
  Div: (a, b) => a / b,
};

function label(node: OnnxNode): string {
  return node.name ? `${node.opType} "${node.name}"` : `${node.opType} -> ${node.outputs.join(", ")}`;
}

function float32(node: OnnxNode, x: Tensor | undefined, index: number): Float32Array {
  if (!x) throw new TensorcastError("INVALID_DATA", `${label(node)} is missing its input ${index}`);
  if (x.dtype.name !== "float32") {
    throw new TensorcastError("NOT_IMPLEMENTED", `${label(node)}: input ${index} is ${x.dtype.name}; the runner's ${node.opType} takes float32 only`);
  }
  return x.data as Float32Array;
}

function noAttributes(node: OnnxNode, allowed: readonly string[] = []): void {
  const other = node.attributes.find((a) => !allowed.includes(a.name));
  if (other) throw new TensorcastError("NOT_IMPLEMENTED", `${label(node)}: attribute ${other.name} is not implemented by the runner`);
}

/** Min, Max (any number of inputs), Sub, Div: operands of one shape, or single elements. */
function elementwise(node: OnnxNode, inputs: readonly (Tensor | undefined)[]): Tensor {
  noAttributes(node);
  const f = BINARY[node.opType];
  if (inputs.length === 0 || ((node.opType === "Sub" || node.opType === "Div") && inputs.length !== 2)) {
    throw new TensorcastError("INVALID_DATA", `${label(node)} has ${inputs.length} inputs`);
  }
  const data = inputs.map((x, i) => float32(node, x, i));
  const big = inputs.reduce((p, x) => (x!.size > p!.size ? x : p))!;
  for (const x of inputs) {
    if (x!.size !== 1 && x!.shape.join() !== big.shape.join()) {
      throw new TensorcastError(
        "NOT_IMPLEMENTED",
        `${label(node)}: shapes [${x!.shape}] and [${big.shape}]: the runner broadcasts single elements only`,
      );
    }
  }
  const out = new Float32Array(big.size);
  for (let i = 0; i < out.length; i++) {
    let v = data[0][data[0].length === 1 ? 0 : i];
    for (let k = 1; k < data.length; k++) v = f(v, data[k][data[k].length === 1 ? 0 : i]);
    out[i] = v;
  }
  return Tensor.fromStorage(out, "float32", big.shape);
}

/** ReduceMin / ReduceMax over every axis (no `axes`), keepdims 0 or 1 (default 1). */
function reduce(node: OnnxNode, [x, axes]: readonly (Tensor | undefined)[]): Tensor {
  if (axes || node.attributes.some((a) => a.name === "axes")) {
    throw new TensorcastError("NOT_IMPLEMENTED", `${label(node)}: the runner reduces over every axis only (no axes)`);
  }
  noAttributes(node, ["keepdims"]);
  const data = float32(node, x, 0);
  const keep = node.attributes.find((a) => a.name === "keepdims");
  const keepdims = keep === undefined ? true : keep.type === "INT" && keep.value === 1n;
  if (data.length === 0) throw new TensorcastError("NOT_IMPLEMENTED", `${label(node)}: the runner does not reduce an empty tensor`);
  const f = node.opType === "ReduceMin" ? Math.min : Math.max;
  let v = data[0];
  for (let i = 1; i < data.length; i++) v = f(v, data[i]);
  return Tensor.fromStorage(new Float32Array([v]), "float32", keepdims ? x!.shape.map(() => 1) : []);
}

/** Clip-11 and later: min and max as optional single-element inputs. */
function clip(node: OnnxNode, [x, lo, hi]: readonly (Tensor | undefined)[]): Tensor {
  noAttributes(node);
  const data = float32(node, x, 0);
  const bound = (t: Tensor | undefined, i: number, none: number): number => {
    if (!t) return none;
    const d = float32(node, t, i);
    if (d.length !== 1) throw new TensorcastError("INVALID_DATA", `${label(node)}: input ${i} must hold one element, got shape [${t.shape}]`);
    return d[0];
  };
  const min = bound(lo, 1, -Infinity);
  const max = bound(hi, 2, Infinity);
  const out = new Float32Array(data.length);
  for (let i = 0; i < out.length; i++) out[i] = Math.min(Math.max(data[i], min), max);
  return Tensor.fromStorage(out, "float32", x!.shape);
}

function round(node: OnnxNode, [x]: readonly (Tensor | undefined)[]): Tensor {
  noAttributes(node);
  const data = float32(node, x, 0);
  return Tensor.fromStorage(data.map(roundHalfEven), "float32", x!.shape);
}

/** The kernels by operator name, for the runner's table. */
export const FUNCTION_BODY_KERNELS: ReadonlyArray<[string, (node: OnnxNode, inputs: readonly (Tensor | undefined)[]) => Tensor]> = [
  ["ReduceMin", reduce], ["ReduceMax", reduce],
  ["Min", elementwise], ["Max", elementwise], ["Sub", elementwise], ["Div", elementwise],
  ["Clip", clip], ["Round", round],
  ["Identity", (node, [x]) => {
    noAttributes(node);
    if (!x) throw new TensorcastError("INVALID_DATA", `${label(node)} is missing its input 0`);
    return x;
  }],
];
