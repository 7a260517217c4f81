/**
 * Reading type-constraints.ts: which element types an operator's inputs and outputs allow at an
 * opset. The table comes from onnx 1.12 and so stops at opset 17; for a model at a later opset the
 * newest version it knows is used, which can only make the pass more cautious (a type added later
 * is not known to be allowed, so the node stays in float32).
 */
import { TYPE_CONSTRAINTS, type OpVersionTypes } from "./type-constraints.js";

/** A formal parameter's type: a type parameter's name, or the types a fixed parameter allows. */
export type Slot = string | number[];

/**
 * The schema of `op` (default domain) in force at `opset`, or undefined when the table has none.
 *
 * @example schemaAt("Resize", 13)?.i[2]  // [1]: Resize-13's `scales` is float32 only
 */
export function schemaAt(op: string, opset: number): OpVersionTypes | undefined {
  const versions = Object.prototype.hasOwnProperty.call(CORRECTIONS, op) ? CORRECTIONS[op]
    : Object.prototype.hasOwnProperty.call(TYPE_CONSTRAINTS, op) ? TYPE_CONSTRAINTS[op] : undefined;
  if (!versions) return undefined;
  let found: OpVersionTypes | undefined;
  for (const v of versions) if (v.v <= opset) found = v;
  return found;
}

/**
 * Schemas onnx 1.12 states wrongly. GridSample-16: X is T1, grid T2 and Y T1 (onnx 1.12 says
 * grid T1 and Y T2; onnx 1.13 and onnxruntime have it right).
 */
const CORRECTIONS: Readonly<Record<string, readonly OpVersionTypes[]>> = {
  GridSample: [{ v: 16, i: ["T1", "T2"], o: ["T1"], t: { T1: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], T2: [1, 10, 11] } }],
};

/** The slot of input (`out` false) or output `k`, following a variadic last parameter; undefined past the end. */
export function slotOf(s: OpVersionTypes, k: number, out: boolean): Slot | undefined {
  const list = out ? s.o : s.i;
  const variadic = out ? s.vo : s.vi;
  if (k < list.length) return list[k];
  return variadic && list.length > 0 ? list[list.length - 1] : undefined;
}

/** The element types a slot allows. */
export function allowedBy(s: OpVersionTypes, slot: Slot): readonly number[] {
  return typeof slot === "string" ? (s.t[slot] ?? []) : slot;
}
