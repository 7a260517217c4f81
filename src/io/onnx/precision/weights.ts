/**
 * Weights-only conversion: each float32 initializer stored in a smaller type, read back through a
 * Cast to float32 placed in the graph that holds it (a body's initializers are not visible
 * outside it). Also `unshadow`, which both modes run first: a body initializer named like a value
 * of an enclosing graph is renamed.
 *
 * Names. The stored tensor and the Cast node get names fresh across the whole model. The Cast's
 * output keeps the initializer's name, so that nothing reading it changes, except in a body whose
 * initializer shadows a name another graph of the model defines too (an If branch holding its own
 * `w`, which onnx and onnxruntime allow for initializers): a node output may not repeat a name an
 * enclosing graph defines (onnx's "single static assignment" rule), so that Cast writes a fresh
 * name and the body's reads of the initializer (its nodes, its outputs, and the bodies inside it
 * that do not define the name again) are renamed to it.
 */
import type { PbField, PbMessage } from "./pb.js";
import { bodiesOf, castNode, nodeOf, renameStrings, UniqueNames, withNodes } from "./graph.js";
import { convertTensorField, type ConvertedTensor, type TensorCastOptions } from "./tensors.js";

/**
 * Stores the float32 initializers of `graph` and of every body inside it as `opts.to` (see the
 * file comment); returns the number of Casts inserted. Recurses once per level of body nesting,
 * which the protobuf nesting limit (100 messages, checked when the model was parsed) bounds.
 * @example storeWeights(model.sub(7, "GraphProto")!, { to: dtype("float8e4m3fn"), saturate: true }, [], 19)  // 2 for two weights
 */
export function storeWeights(graph: PbMessage, opts: TensorCastOptions, out: ConvertedTensor[], opset: number): number {
  const names = new UniqueNames(graph);
  const graphsDefining = new Map<string, number>();
  countDefinitions(graph, graphsDefining);
  const store = (g: PbMessage, main: boolean): number => {
    let count = 0;
    for (const f of g.all(1)) for (const body of bodiesOf(nodeOf(g, f))) count += store(body, false);
    const inputs = new Set<string>();
    for (const v of g.subs(11, "ValueInfoProto")) inputs.add(v.string(1));
    const casts: PbField[] = [];
    const renames = new Map<string, string>();
    for (const f of g.all(5)) {
      const t = g.message(f, "TensorProto");
      const name = t.string(8);
      // An initializer that is also an input is a default the caller may replace with float32 data.
      if (t.int(2) !== 1 || inputs.has(name)) continue;
      const converted = convertTensorField(f, opts, name, "initializer", out);
      if (!converted) continue;
      const stored = names.fresh(`${name}__${opts.to.name}`);
      converted.setString(8, stored);
      f.msg = converted;
      let back = name;
      if (!main && (graphsDefining.get(name) ?? 0) > 1) {
        back = names.fresh(name);
        renames.set(name, back);
      }
      casts.push({ no: 1, wire: 2, data: new Uint8Array(0), msg: castNode(names.fresh(`${name}__cast`), stored, back, 1, opset) });
    }
    if (renames.size > 0) renameReads(g, renames);
    const inserted = casts.length;
    // The Casts come first: they read only initializers, and every reader follows them.
    if (inserted > 0) {
      for (const f of g.fields) if (f.no === 1) casts.push(f);
      g.fields = withNodes(g.fields, casts);
    }
    return count + inserted;
  };
  return store(graph, true);
}

/** Adds 1 per graph (of `g` and its bodies) defining each name: initializers, inputs, node outputs. */
function countDefinitions(g: PbMessage, counts: Map<string, number>): void {
  const here = namesDefinedBy(g);
  for (const f of g.all(1)) for (const body of bodiesOf(nodeOf(g, f))) countDefinitions(body, counts);
  for (const name of here) counts.set(name, (counts.get(name) ?? 0) + 1);
}

function namesDefinedBy(g: PbMessage): Set<string> {
  const names = new Set<string>();
  for (const t of g.subs(5, "TensorProto")) names.add(t.string(8));
  for (const v of g.subs(11, "ValueInfoProto")) names.add(v.string(1));
  for (const f of g.all(1)) for (const s of nodeOf(g, f).strings(2)) if (s !== "") names.add(s);
  return names;
}

/**
 * Renames every body initializer named like a value an enclosing graph defines to a fresh name,
 * with the body's reads of it. onnx allows the shadowing, but once the pass gives the two values
 * different types, onnx's type inference (1.12) gives the body's reads the outer value's type and
 * refuses the model: unshadowed, every read says which tensor it means.
 * @example unshadow(graph)  // an If branch's own `w` becomes `w_1`, and its nodes read `w_1`
 */
export function unshadow(graph: PbMessage): void {
  let names: UniqueNames | undefined;
  const walk = (g: PbMessage, outer: ReadonlySet<string>): void => {
    const renames = new Map<string, string>();
    for (const t of g.subs(5, "TensorProto")) {
      const name = t.string(8);
      if (!outer.has(name)) continue;
      names ??= new UniqueNames(graph);
      const fresh = names.fresh(name);
      t.setString(8, fresh);
      renames.set(name, fresh);
    }
    if (renames.size > 0) renameReads(g, renames);
    const here = new Set(outer);
    for (const name of namesDefinedBy(g)) here.add(name);
    for (const f of g.all(1)) for (const body of bodiesOf(nodeOf(g, f))) walk(body, here);
  };
  walk(graph, new Set());
}

/**
 * Renames the reads of `renames`' names in `g`: its nodes' inputs, its outputs, and within each
 * body, the names that body does not define again (those reads are its own).
 */
function renameReads(g: PbMessage, renames: ReadonlyMap<string, string>): void {
  for (const f of g.all(1)) {
    const n = nodeOf(g, f);
    if (renameStrings(n, 1, renames)) f.msg = n;
    for (const body of bodiesOf(n)) {
      const own = namesDefinedBy(body);
      let visible: Map<string, string> | undefined;
      for (const [from, to] of renames) {
        if (own.has(from)) continue;
        (visible ??= new Map()).set(from, to);
      }
      if (visible) renameReads(body, visible);
    }
  }
  for (const v of g.subs(12, "ValueInfoProto")) {
    const to = renames.get(v.string(1));
    if (to !== undefined) v.setString(1, to);
  }
}
