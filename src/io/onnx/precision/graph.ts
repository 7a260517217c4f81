/**
 * Whole-graph precision conversion: a float32 ONNX model computing in float16 or bfloat16.
 *
 * Each value's float32-ness is found from the model's declarations (inputs, outputs, value_info,
 * initializers, Constant values) and, where none is given, from the operator schemas' type
 * constraints (type-constraints.ts): an output whose type parameter is shared with an input has
 * that input's type. Then every node either computes in the target type (its float32 inputs and
 * outputs change type) or is kept in float32: when its operator is on the block list, is not of the
 * default domain, is unknown to the schema table, or binds float32 to a type parameter that does
 * not allow the target at the model's opset. A Cast is inserted wherever a value's producer and a
 * consumer disagree (one per value and type, right before the first consumer, so the node order
 * stays topological). Initializers and Constant values that only float32 consumers read (Resize's
 * `scales`, say) stay float32.
 */
import { TensorcastError } from "../../../errors.js";
import { decodeUtf8 } from "../wire.js";
import { PbMessage, utf8Bytes, type PbField } from "./pb.js";
import { allowedBy, schemaAt, slotOf } from "./schema-types.js";
import { convertTensorField, type ConvertedTensor, type TensorCastOptions } from "./tensors.js";

const FLOAT = 1;
const FLOAT16 = 10;

/**
 * Operators kept in float32 by default: those the onnxconverter-common / onnxruntime float16
 * converters block (ML operators, and ones whose float16 kernels are missing or lossy:
 * NonMaxSuppression, TopK, RoiAlign, Resize, Range, CumSum, Min, Max, Upsample, RandomUniformLike).
 * @example DEFAULT_BLOCKED_OPS.includes("Resize")  // true
 */
export const DEFAULT_BLOCKED_OPS: readonly string[] = [
  "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer", "FeatureVectorizer", "Imputer",
  "LabelEncoder", "LinearClassifier", "LinearRegressor", "Normalizer", "OneHotEncoder", "SVMClassifier", "SVMRegressor",
  "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap", "NonMaxSuppression", "TopK", "RoiAlign",
  "Resize", "Range", "CumSum", "Min", "Max", "Upsample", "RandomUniformLike",
  // Its function body (which onnxruntime expands) adds a float32 epsilon Constant to T.
  "MeanVarianceNormalization",
];

/**
 * A node kept in float32, and why.
 * @example { graph: "main", name: "rs", opType: "Resize", reason: "on the block list" }
 */
export interface KeptNode {
  graph: string;
  name: string;
  opType: string;
  reason: string;
}

/** How the whole-graph pass converts (see convertModelPrecision's options). */
export interface GraphPassOptions extends TensorCastOptions {
  /** Keep the main graph's float32 inputs and outputs float32, with Casts at the boundary. */
  keepIoTypes: boolean;
  /** Operators kept in float32. */
  blockOps: ReadonlySet<string>;
}

/** What the whole-graph pass did. */
export interface GraphPassReport {
  tensors: ConvertedTensor[];
  kept: KeptNode[];
  castsInserted: number;
  /** Outputs of the Casts inserted from float16 to float32 (before nodes kept in float32). */
  widenedHalf: string[];
}

/** Ops whose float output follows their input when no `dtype` attribute says otherwise. */
const DTYPE_OR_INPUT = new Set(["EyeLike", "RandomNormalLike", "RandomUniformLike", "Bernoulli"]);
/** Ops whose bodies run as part of the node (attributes of type GRAPH / GRAPHS). */
const CONTAINERS = new Set(["If", "Loop", "Scan"]);

interface NodeInfo {
  /** The node's field in its graph; `field.msg` is its parse when kept (see nodeOf), else it is read from its bytes. */
  field: PbField;
  opType: string;
  inputs: string[];
  outputs: string[];
  /** Per input: the type it must arrive in (0: whatever it is). */
  want: number[];
  /** Per output: the type it is produced in (0: unknown or not float). */
  produce: number[];
  /** Constant nodes whose float value is converted only if some consumer wants the target. */
  source: boolean;
  kept: boolean;
  /** Why it is kept in float32, when it is. */
  reason?: string;
  /** Whether deciding edited the node (an attribute's type), so that its parse must be kept. */
  edited?: boolean;
}

/**
 * Every name a graph and its bodies use (nodes, values, initializers, declarations), so that the
 * nodes and values a pass adds get names of their own.
 * @example const names = new UniqueNames(graph); names.fresh("x__cast") // "x__cast", or "x__cast_1" when taken
 */
export class UniqueNames {
  private readonly names = new Set<string>();
  /** Per base, the next suffix to try: a base freshened n times costs n tries, not n^2 / 2. */
  private readonly next = new Map<string, number>();

  constructor(g: PbMessage) {
    this.collect(g);
  }

  private collect(g: PbMessage): void {
    for (const f of g.all(1)) {
      const n = nodeOf(g, f);
      this.names.add(n.string(3));
      for (const s of n.strings(1)) this.names.add(s);
      for (const s of n.strings(2)) this.names.add(s);
      for (const body of bodiesOf(n)) this.collect(body);
    }
    for (const t of g.subs(5, "TensorProto")) this.names.add(t.string(8));
    for (const no of [11, 12, 13]) for (const v of g.subs(no, "ValueInfoProto")) this.names.add(v.string(1));
  }

  /** `base`, or `base_1`, `base_2`, ... : the first not yet used, now taken. */
  fresh(base: string): string {
    let n = base;
    let k = this.next.get(base) ?? 1;
    for (; this.names.has(n); k++) n = `${base}_${k}`;
    this.next.set(base, k);
    this.names.add(n);
    return n;
  }

  /** Whether `name` is taken. */
  has(name: string): boolean {
    return this.names.has(name);
  }
}

class Pass {
  readonly report: GraphPassReport = { tensors: [], kept: [], castsInserted: 0, widenedHalf: [] };
  readonly T: number;
  private readonly names: UniqueNames;

  constructor(readonly opts: GraphPassOptions, readonly opset: number, graph: PbMessage) {
    this.T = opts.to.onnx;
    this.names = new UniqueNames(graph);
  }

  fresh(base: string): string {
    return this.names.fresh(base);
  }

  /**
   * Converts graph `g`. `outer`: the new types of the values of enclosing graphs it may read;
   * `outerOrig`: their original types.
   */
  graph(g: PbMessage, outer: Map<string, number>, outerOrig: Map<string, number>, main: boolean, keepAll = false): void {
    const T = this.T;
    const graphName = g.string(2);
    if (g.has(15)) {
      throw new TensorcastError("NOT_IMPLEMENTED", `graph ${JSON.stringify(graphName)} has sparse initializers, which the precision pass does not convert`);
    }
    const orig = new Map(outerOrig);
    const declared = new Map<string, number>();
    const inputs = g.subs(11, "ValueInfoProto");
    const outputs = g.subs(12, "ValueInfoProto");
    const valueInfo = g.subs(13, "ValueInfoProto");
    for (const list of [valueInfo, inputs, outputs]) {
      for (const v of list) {
        const e = elemTypeOf(v);
        if (e !== 0) declared.set(v.string(1), e);
      }
    }
    const initFields = g.all(5);
    const initNames = new Map<string, PbField>();
    for (const f of initFields) {
      const t = g.message(f, "TensorProto");
      initNames.set(t.string(8), f);
      orig.set(t.string(8), t.int(2));
    }
    for (const v of inputs) orig.set(v.string(1), elemTypeOf(v));

    // 1. Original types and each node's decision.
    const infos: NodeInfo[] = [];
    for (const f of g.all(1)) {
      const node = nodeOf(g, f);
      const info = this.decide(node, f, orig, declared, keepAll);
      if (info.edited || info.source) f.msg = node;
      infos.push(info);
    }

    // 2. What each value's consumers want.
    // Only "float32 and nothing else" matters (convertSource): a bit for float32, one for any other
    // type, rather than a Set per value.
    const wants = new Map<string, number>();
    const addWant = (name: string, w: number): void => {
      if (w === 0 || name === "") return;
      wants.set(name, (wants.get(name) ?? 0) | (w === FLOAT ? 1 : 2));
    };
    for (const info of infos) info.inputs.forEach((name, k) => addWant(name, info.want[k]));
    const ioType = (name: string): number => ((orig.get(name) ?? 0) === FLOAT ? ((main && this.opts.keepIoTypes) || keepAll ? FLOAT : T) : 0);
    for (const v of outputs) addWant(v.string(1), ioType(v.string(1)));
    for (const info of infos) {
      // Only kept nodes can hold bodies (nodeOf keeps every node that does).
      if (info.field.msg) for (const body of bodiesOf(info.field.msg)) for (const name of outerReads(body)) if (orig.get(name) === FLOAT) addWant(name, info.kept ? FLOAT : T);
    }

    // 3. What each value is produced as.
    const produced = new Map(outer);
    const inputNames = new Set(inputs.map((v) => v.string(1)));
    for (const v of inputs) {
      const name = v.string(1);
      const o = orig.get(name) ?? 0;
      produced.set(name, o === FLOAT ? ioType(name) : o);
    }
    const convertSource = (name: string): boolean => {
      return wants.get(name) !== 1;
    };
    for (const [name, f] of initNames) {
      const o = orig.get(name) ?? 0;
      if (inputNames.has(name)) continue;
      if (o === FLOAT && convertSource(name)) {
        const t = convertTensorField(f, this.opts, name, "initializer", this.report.tensors);
        if (t) {
          f.msg = t;
          produced.set(name, T);
          continue;
        }
      }
      produced.set(name, o);
    }
    // An initializer that is also an input (a default the caller may override) follows the input.
    for (const name of inputNames) {
      const f = initNames.get(name);
      if (f && produced.get(name) === T) {
        const t = convertTensorField(f, this.opts, name, "initializer", this.report.tensors);
        if (t) f.msg = t;
      }
    }
    for (const info of infos) {
      if (info.source) {
        const name = info.outputs[0];
        if (convertSource(name)) this.convertConstant(info, g.message(info.field, "NodeProto"));
        else {
          info.kept = true;
          info.produce[0] = FLOAT;
        }
      }
      info.outputs.forEach((name, k) => {
        if (name !== "") produced.set(name, info.produce[k] !== 0 ? info.produce[k] : (orig.get(name) ?? 0));
      });
    }

    // 4. Outputs whose producer disagrees with the type they are declared with: the producer's
    //    value is renamed and a Cast writes the output's name.
    const tail: PbMessage[] = [];
    const renames = new Map<string, string>();
    for (const v of outputs) {
      const name = v.string(1);
      const w = ioType(name);
      const p = produced.get(name) ?? 0;
      if (w !== 0 && p !== 0 && p !== w && !inputNames.has(name)) {
        const renamed = this.fresh(`${name}__${typeLabel(p)}`);
        renames.set(name, renamed);
        produced.set(renamed, p);
        tail.push(castNode(this.fresh(`${name}__cast`), renamed, name, w, this.opset));
        if (this.opset < 6) g.addMessage(13, typedValue(renamed, p));
        this.report.castsInserted++;
      }
      if (w !== 0) setElemType(v, w);
    }
    // All renames in one walk: one per output would cost outputs x nodes.
    if (renames.size > 0) {
      this.rename(g, renames);
      const to = (s: string): string => renames.get(s) ?? s;
      for (const info of infos) {
        info.outputs = info.outputs.map(to);
        info.inputs = info.inputs.map(to);
      }
    }
    for (const v of inputs) {
      const p = produced.get(v.string(1)) ?? 0;
      if (orig.get(v.string(1)) === FLOAT && p !== 0) setElemType(v, p);
    }
    const outputNames = new Set(outputs.map((v) => v.string(1)));
    for (const v of valueInfo) {
      const name = v.string(1);
      if (orig.get(name) !== FLOAT && declared.get(name) !== FLOAT) continue;
      const p = outputNames.has(name) ? ioType(name) : (produced.get(name) ?? 0);
      if (p !== 0) setElemType(v, p);
    }

    // 5. Casts before consumers that want another type; bodies converted in place.
    const casts = new Map<string, string>();
    const nodes: PbField[] = [];
    for (const info of infos) {
      let inputFields: PbField[] | undefined;
      info.inputs.forEach((name, k) => {
        const w = info.want[k];
        const p = produced.get(name) ?? 0;
        if (w === 0 || p === 0 || p === w || name === "" || !isFloatish(p) || !isFloatish(w)) return;
        const key = `${name}\u0000${w}`;
        let castName = casts.get(key);
        if (!castName) {
          castName = this.fresh(`${name}__${typeLabel(w)}`);
          casts.set(key, castName);
          nodes.push(fieldOf(castNode(this.fresh(`${name}__cast_${typeLabel(w)}`), name, castName, w, this.opset)));
          // onnxruntime infers no type for Cast-1 (its `to` is a string): the model says it.
          if (this.opset < 6) g.addMessage(13, typedValue(castName, w));
          this.report.castsInserted++;
          if (p === FLOAT16 && w === FLOAT) this.report.widenedHalf.push(castName);
        }
        info.inputs[k] = castName;
        inputFields ??= g.message(info.field, "NodeProto").all(1);
        inputFields[k].data = utf8Bytes(castName);
      });
      if (info.kept && !info.source) this.report.kept.push({ graph: graphName, name: nodeOf(g, info.field).string(3), opType: info.opType, reason: keptReason(info) });
      if (CONTAINERS.has(info.opType)) {
        // A kept container's bodies stay float32 too, with Casts where they read converted values.
        const visibleOrig = new Map(orig);
        for (const body of bodiesOf(nodeOf(g, info.field))) this.graph(body, produced, visibleOrig, false, keepAll || info.kept);
      }
      nodes.push(info.field);
    }
    for (const c of tail) nodes.push(fieldOf(c));
    g.fields = withNodes(g.fields, nodes);
  }

  /** Original output types of `node` and whether it computes in the target type. */
  decide(node: PbMessage, field: PbField, orig: Map<string, number>, declared: Map<string, number>, keepAll: boolean): NodeInfo {
    const T = this.T;
    const opType = node.string(4);
    const domain = node.string(7);
    const inputs = node.strings(1);
    const outputs = node.strings(2);
    const typeIn = inputs.map((s) => (s === "" ? 0 : (orig.get(s) ?? 0)));
    const info: NodeInfo = { field, opType, inputs, outputs, want: inputs.map(() => 0), produce: outputs.map(() => 0), source: false, kept: false };
    const defaultDomain = domain === "" || domain === "ai.onnx";
    const schema = defaultDomain ? schemaAt(opType, this.opset) : undefined;
    const attrs = node.subs(5, "AttributeProto");
    const intAttr = (name: string): number | undefined => {
      const a = attrs.find((x) => x.string(1) === name);
      return a && a.has(3) ? Number(a.varint(3)) : undefined;
    };

    // Inputs of unknown type that share a type parameter with a float32 input are float32 too:
    // the schema binds one type to the parameter.
    if (schema) {
      const floatParams = new Set<string>();
      typeIn.forEach((t, j) => {
        const slot = slotOf(schema, j, false);
        if (t === FLOAT && typeof slot === "string") floatParams.add(slot);
      });
      typeIn.forEach((t, j) => {
        const slot = slotOf(schema, j, false);
        if (t === 0 && inputs[j] !== "" && typeof slot === "string" && floatParams.has(slot)) {
          typeIn[j] = FLOAT;
          orig.set(inputs[j], FLOAT);
        }
      });
    }
    // Original output types: declared, else from the schema.
    const outType = outputs.map((s, k) => {
      if (declared.has(s)) return declared.get(s)!;
      if (!defaultDomain) return 0;
      if (opType === "Constant") return constantType(attrs);
      if (opType === "ConstantOfShape") return tensorAttrType(attrs, "value") ?? FLOAT;
      if (CONTAINERS.has(opType)) return containerOutputType(node, opType, k);
      if (!schema) return 0;
      const slot = slotOf(schema, k, true);
      if (slot === undefined) return 0;
      if (typeof slot !== "string") return slot.length === 1 ? slot[0] : 0;
      for (let j = 0; j < inputs.length; j++) if (slotOf(schema, j, false) === slot && typeIn[j] !== 0) return typeIn[j];
      const dt = intAttr("to") ?? intAttr("dtype") ?? cast1To(attrs);
      if (dt !== undefined) return dt;
      if (DTYPE_OR_INPUT.has(opType)) return typeIn[0];
      const allowed = allowedBy(schema, slot);
      if (allowed.length === 1) return allowed[0];
      return opType.startsWith("Random") ? FLOAT : 0;
    });
    outputs.forEach((s, k) => {
      if (s !== "") orig.set(s, outType[k]);
    });
    const involvesFloat = typeIn.includes(FLOAT) || outType.includes(FLOAT);
    const keep = (reason: string): NodeInfo => {
      info.kept = involvesFloat;
      info.reason = reason;
      info.want = typeIn.map((t) => (t === FLOAT ? FLOAT : 0));
      info.produce = outType.map((t) => t);
      return info;
    };
    if (!involvesFloat) {
      info.produce = outType.map((t) => t);
      return info;
    }
    if (keepAll) return keep("inside a body kept in float32");
    if (this.opts.blockOps.has(opType)) return keep("on the block list");
    if (!defaultDomain) return keep(`domain ${JSON.stringify(domain)} is not converted`);
    if (opType === "Constant") {
      info.source = true;
      info.produce = [outType[0]];
      return info;
    }
    if (CONTAINERS.has(opType)) {
      // If, Loop and Scan take "V" (every tensor type at the version) for their values.
      const allowed = schema?.t.V;
      if (!allowed || !allowed.includes(T)) return keep(`${opType}${schema ? `-${schema.v}` : ""} does not allow ${typeLabel(T)} for its values`);
      info.want = typeIn.map((t) => (t === FLOAT ? T : 0));
      info.produce = outType.map((t) => (t === FLOAT ? T : t));
      return info;
    }
    if (!schema) return keep(`${opType} is unknown to the schema table (opsets up to 17)`);
    // Every type parameter bound to float32 must allow the target.
    const params = new Set<string>();
    typeIn.forEach((t, j) => {
      const slot = slotOf(schema, j, false);
      if (t === FLOAT && typeof slot === "string") params.add(slot);
    });
    outType.forEach((t, k) => {
      const slot = slotOf(schema, k, true);
      if (t === FLOAT && typeof slot === "string") params.add(slot);
    });
    for (const p of params) {
      if (!(schema.t[p] ?? []).includes(T)) return keep(`${opType}-${schema.v} does not allow ${typeLabel(T)} for ${p}`);
    }
    const inputParams = new Set(inputs.map((_, j) => slotOf(schema, j, false)).filter((s): s is string => typeof s === "string"));
    info.want = typeIn.map((t, j) => {
      if (t !== FLOAT) return 0;
      const slot = slotOf(schema, j, false);
      return slot !== undefined && allowedBy(schema, slot).includes(T) ? T : FLOAT;
    });
    info.produce = outType.map((t, k) => {
      if (t !== FLOAT) return t;
      const slot = slotOf(schema, k, true);
      if (slot === undefined || !allowedBy(schema, slot).includes(T)) return FLOAT;
      if (typeof slot === "string" && !inputParams.has(slot)) return this.outputOnlyParam(node, attrs, opType, info);
      return T;
    });
    return info;
  }

  /** An output whose type an attribute decides (Cast's `to`, a `dtype`, ConstantOfShape's value). */
  private outputOnlyParam(node: PbMessage, attrs: PbMessage[], opType: string, info: NodeInfo): number {
    const T = this.T;
    info.edited = true;
    const a = attrs.find((x) => x.string(1) === "to" || x.string(1) === "dtype");
    if (a && a.has(3)) {
      if (Number(a.varint(3)) === FLOAT) a.setVarint(3, T);
      return T;
    }
    if (a && a.has(4) && a.string(4) === "FLOAT" && CAST1_NAMES[T]) {
      a.setString(4, CAST1_NAMES[T]);
      return T;
    }
    if (DTYPE_OR_INPUT.has(opType)) return info.want[0] === T ? T : FLOAT;
    if (opType === "ConstantOfShape") {
      const v = attrs.find((x) => x.string(1) === "value");
      if (!v) return FLOAT;
      const t = v.all(5).at(-1);
      if (!t) return FLOAT;
      const converted = convertTensorField(t, this.opts, `${node.string(3) || opType}.value`, "attribute", this.report.tensors);
      if (!converted) return FLOAT;
      t.msg = converted;
      return T;
    }
    return FLOAT;
  }


  /** A Constant whose float value is converted: `value` as a tensor, `value_float(s)` become one. */
  private convertConstant(info: NodeInfo, node: PbMessage): void {
    const label = node.string(3) || info.outputs[0];
    for (const f of node.all(5)) {
      const a = node.message(f, "AttributeProto");
      const name = a.string(1);
      if (name === "value") {
        const t = a.all(5).at(-1);
        const converted = t && convertTensorField(t, this.opts, label, "constant", this.report.tensors);
        if (converted) {
          t.msg = converted;
          info.produce[0] = this.T;
        }
      } else if (name === "value_float" || name === "value_floats") {
        // Rewritten as a `value` tensor: value_float(s) can only say float32.
        const values = name === "value_float" ? [floatOf(a.all(2).at(-1))] : floatsOf(a);
        const shape = name === "value_float" ? [] : [values.length];
        const tensor = new PbMessage([], "TensorProto");
        for (const d of shape) tensor.addVarint(1, d);
        tensor.addVarint(2, FLOAT);
        const raw = new Uint8Array(new Float32Array(values).buffer);
        tensor.fields.push({ no: 9, wire: 2, data: raw });
        const field = { no: 5, wire: 2 as const, data: tensor.encode() };
        const converted = convertTensorField(field, this.opts, label, "constant", this.report.tensors)!;
        a.remove(2).remove(7).setString(1, "value").setMessage(5, converted).setVarint(20, 4);
        info.produce[0] = this.T;
      }
    }
  }

  /** Renames values (`from` -> `to` in `renames`) wherever graph `g` and its bodies define or read them. */
  rename(g: PbMessage, renames: ReadonlyMap<string, string>): void {
    for (const f of g.all(1)) {
      const n = nodeOf(g, f);
      // Both renamed, then kept: `||` would skip the outputs of a node whose inputs were renamed.
      const inputs = renameStrings(n, 1, renames);
      if (renameStrings(n, 2, renames) || inputs) f.msg = n;
      for (const body of bodiesOf(n)) this.renameReads(body, renames);
    }
    for (const t of g.subs(5, "TensorProto")) {
      const to = renames.get(t.string(8));
      if (to !== undefined) t.setString(8, to);
    }
  }

  private renameReads(g: PbMessage, renames: ReadonlyMap<string, string>): void {
    for (const f of g.all(1)) {
      const n = nodeOf(g, f);
      if (renameStrings(n, 1, renames)) f.msg = n;
      for (const body of bodiesOf(n)) this.renameReads(body, renames);
    }
    for (const v of g.subs(12, "ValueInfoProto")) {
      const to = renames.get(v.string(1));
      if (to !== undefined) v.setString(1, to);
    }
  }
}

/**
 * Renames the occurrences of string field `no` (a node's inputs or outputs) found in `renames`;
 * true when one was (the caller keeps the node's parse then: see nodeOf).
 */
export function renameStrings(n: PbMessage, no: number, renames: ReadonlyMap<string, string>): boolean {
  let renamed = false;
  for (const f of n.all(no)) {
    const to = renames.get(decodeUtf8(f.data, `${n.context}: field ${no}`));
    if (to !== undefined) {
      f.data = utf8Bytes(to);
      renamed = true;
    }
  }
  return renamed;
}

/**
 * Node field `f` of graph `g`, parsed for reading. A node holding bodies (GRAPH or GRAPHS
 * attributes) is kept parsed, as `g.message` keeps it: the passes edit bodies in place and must
 * find the same objects again. Any other node is parsed afresh and dropped once read: a kept parse
 * costs about 600 bytes a node, and a 1,000,000-node chain held them all (1.7 GB resident).
 * Whoever edits a node read this way keeps it (`f.msg = n`), as renameStrings' callers do.
 * @example for (const f of g.all(1)) console.log(nodeOf(g, f).string(4))  // each op_type
 */
export function nodeOf(g: PbMessage, f: PbField): PbMessage {
  if (f.msg) return f.msg;
  const n = g.peek(f, "NodeProto");
  if (bodiesOf(n).length > 0) f.msg = n;
  return n;
}

/** Cast-1's STRING `to` as a type number; undefined when absent or not a type it names. */
function cast1To(attrs: PbMessage[]): number | undefined {
  const a = attrs.find((x) => x.string(1) === "to");
  if (!a || !a.has(4)) return undefined;
  const s = a.string(4);
  const names: Record<string, number> = { FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8, BOOL: 9, FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13 };
  return names[s];
}

function keptReason(info: NodeInfo): string {
  return info.reason ?? "its float value is read only in float32";
}

function isFloatish(t: number): boolean {
  return t === FLOAT || t === 10 || t === 16;
}

function typeLabel(t: number): string {
  return t === FLOAT ? "float32" : t === 10 ? "float16" : t === 16 ? "bfloat16" : `type${t}`;
}

function fieldOf(msg: PbMessage): PbField {
  return { no: 1, wire: 2, data: new Uint8Array(0), msg };
}

/** Cast-1's `to` is a STRING naming the type (TensorProto.DataType's enum names). */
const CAST1_NAMES: Record<number, string> = { 1: "FLOAT", 10: "FLOAT16", 11: "DOUBLE" };

/**
 * A Cast node (NodeProto) from `input` to `output` as element type `to`, in the form `opset` reads.
 * @example castNode("c", "x", "x16", 10, 13).strings(4)  // ["Cast"]
 */
export function castNode(name: string, input: string, output: string, to: number, opset: number): PbMessage {
  const attr = new PbMessage([], "AttributeProto").addString(1, "to");
  if (opset < 6) {
    if (!CAST1_NAMES[to]) throw new TensorcastError("NOT_IMPLEMENTED", `Cast-1 (opset ${opset}) cannot cast to type ${to}`);
    attr.addString(4, CAST1_NAMES[to]).addVarint(20, 3);
  } else attr.addVarint(3, to).addVarint(20, 2);
  return new PbMessage([], "NodeProto").addString(1, input).addString(2, output).addString(3, name).addString(4, "Cast").addMessage(5, attr);
}

/**
 * The GRAPH (g) and GRAPHS attributes of a node.
 * @example bodiesOf(ifNode).length  // 2: then_branch and else_branch
 */
export function bodiesOf(node: PbMessage): PbMessage[] {
  const out: PbMessage[] = [];
  for (const a of node.subs(5, "AttributeProto")) {
    for (const g of a.subs(6, "GraphProto")) out.push(g);
    for (const g of a.subs(11, "GraphProto")) out.push(g);
  }
  return out;
}

/**
 * A graph's fields with its nodes replaced by `nodes`, placed where the first node was (at the
 * start when there was none). A loop, not a spread into splice: a spread passes every node as an
 * argument, which overflows the call stack past about 100,000 nodes.
 */
export function withNodes(fields: readonly PbField[], nodes: readonly PbField[]): PbField[] {
  const out: PbField[] = [];
  let placed = false;
  const place = (): void => {
    for (const n of nodes) out.push(n);
    placed = true;
  };
  for (const f of fields) {
    if (f.no !== 1) out.push(f);
    else if (!placed) place();
  }
  if (!placed) {
    // No node before: at the start, as protobuf writers order fields by number.
    const tail = out.splice(0, out.length);
    place();
    for (const f of tail) out.push(f);
  }
  return out;
}

/** Names a graph (or its bodies) reads that it does not define: values of enclosing graphs. */
function outerReads(g: PbMessage): Set<string> {
  const defined = new Set<string>();
  const reads = new Set<string>();
  const walk = (h: PbMessage): void => {
    for (const t of h.subs(5, "TensorProto")) defined.add(t.string(8));
    for (const v of h.subs(11, "ValueInfoProto")) defined.add(v.string(1));
    for (const f of h.all(1)) {
      const n = nodeOf(h, f);
      for (const s of n.strings(1)) if (s !== "" && !defined.has(s)) reads.add(s);
      for (const body of bodiesOf(n)) walk(body);
      for (const s of n.strings(2)) defined.add(s);
    }
    for (const v of h.subs(12, "ValueInfoProto")) if (!defined.has(v.string(1))) reads.add(v.string(1));
  };
  walk(g);
  return reads;
}

/** A ValueInfoProto of a tensor of element type `t`, shape unknown. */
function typedValue(name: string, t: number): PbMessage {
  const tensor = new PbMessage([], "TypeProto.Tensor").addVarint(1, t);
  return new PbMessage([], "ValueInfoProto").addString(1, name).addMessage(2, new PbMessage([], "TypeProto").addMessage(1, tensor));
}

/**
 * TypeProto.tensor_type.elem_type of a ValueInfoProto; 0 when it has none.
 * @example elemTypeOf(graph.subs(11)[0])  // 1 for a float32 input
 */
export function elemTypeOf(v: PbMessage): number {
  const tensor = v.sub(2, "TypeProto")?.sub(1, "TypeProto.Tensor");
  return tensor ? tensor.int(1) : 0;
}

function setElemType(v: PbMessage, t: number): void {
  const tensor = v.sub(2, "TypeProto")?.sub(1, "TypeProto.Tensor");
  if (tensor) tensor.setVarint(1, t);
}

function constantType(attrs: PbMessage[]): number {
  for (const a of attrs) {
    const name = a.string(1);
    if (name === "value") return a.sub(5, "TensorProto")?.int(2) ?? 0;
    if (name === "value_float" || name === "value_floats") return FLOAT;
    if (name === "value_int" || name === "value_ints") return 7;
    if (name === "value_string" || name === "value_strings") return 8;
  }
  return 0;
}

function tensorAttrType(attrs: PbMessage[], name: string): number | undefined {
  const a = attrs.find((x) => x.string(1) === name);
  return a?.sub(5, "TensorProto")?.int(2);
}

function containerOutputType(node: PbMessage, opType: string, k: number): number {
  const attrs = node.subs(5, "AttributeProto");
  const body = (name: string): PbMessage | undefined => attrs.find((a) => a.string(1) === name)?.sub(6, "GraphProto");
  const g = opType === "If" ? body("then_branch") : body("body");
  if (!g) return 0;
  const outs = g.subs(12, "ValueInfoProto");
  const index = opType === "Loop" ? k + 1 : k;
  return outs[index] ? elemTypeOf(outs[index]) : 0;
}

/** A FLOAT attribute's value (field f), 0 when absent as protobuf reads it. */
export function floatOf(f: PbField | undefined): number {
  if (!f) return 0;
  return new DataView(f.data.buffer, f.data.byteOffset, 4).getFloat32(0, true);
}

function floatsOf(a: PbMessage): number[] {
  const out: number[] = [];
  for (const f of a.all(7)) {
    const view = new DataView(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    for (let at = 0; at + 4 <= f.data.byteLength; at += 4) out.push(view.getFloat32(at, true));
  }
  return out;
}

/**
 * Runs the pass over a parsed ModelProto's graph (in place).
 * @example convertGraphPrecision(PbMessage.parse(bytes, "ModelProto"), 13, opts).kept  // [] for an MLP
 * @throws TensorcastError NOT_IMPLEMENTED for tensors with external data.
 */
export function convertGraphPrecision(model: PbMessage, opset: number, opts: GraphPassOptions): GraphPassReport {
  const graph = model.sub(7, "GraphProto");
  if (!graph) throw new TensorcastError("INVALID_DATA", "ModelProto has no graph");
  const pass = new Pass(opts, opset, graph);
  pass.graph(graph, new Map(), new Map(), true);
  return pass.report;
}

