/**
 * Large but valid ONNX models for the whole-model conversion's size tests and fuzz generators,
 * written straight as protobuf bytes (no src/ writer: a fault shared by the writer and the reader
 * under test could not hide here). Every builder works in chunks of preallocated bytes, so a
 * million-node model takes a fraction of a second and no array of numbers per byte.
 */

const encoder = new TextEncoder();

/** A growing byte buffer with the few protobuf pieces the builders need. */
export class Bytes {
  buf = new Uint8Array(1024);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.length + n, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.length));
    this.buf = grown;
  }
  varint(v: number): this {
    this.room(10);
    while (v >= 128) {
      this.buf[this.length++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    this.buf[this.length++] = v;
    return this;
  }
  raw(b: Uint8Array): this {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
    return this;
  }
  /** A length-delimited field holding bytes, a string or another Bytes. */
  len(field: number, body: Uint8Array | string | Bytes): this {
    const b = typeof body === "string" ? encoder.encode(body) : body instanceof Bytes ? body.bytes() : body;
    return this.varint(field * 8 + 2).varint(b.length).raw(b);
  }
  int(field: number, v: number): this {
    return this.varint(field * 8).varint(v);
  }
  /** The same bytes `count` times (doubling copies: a flood of 20,000,000 entries in milliseconds). */
  repeat(unit: Uint8Array, count: number): this {
    if (count <= 0) return this;
    this.room(unit.length * count);
    const start = this.length;
    this.buf.set(unit, start);
    let done = unit.length;
    const total = unit.length * count;
    while (done < total) {
      const n = Math.min(done, total - done);
      this.buf.copyWithin(start + done, start, start + n);
      done += n;
    }
    this.length += total;
    return this;
  }
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** A ValueInfoProto of a tensor of element type `elem` (1: float32) and shape `dims`. */
export function valueInfo(name: string, elem = 1, dims: number[] = [2]): Bytes {
  const shape = new Bytes();
  for (const d of dims) shape.len(1, new Bytes().int(1, d));
  const tensor = new Bytes().int(1, elem).len(2, shape);
  return new Bytes().len(1, name).len(2, new Bytes().len(1, tensor));
}

/** A NodeProto (default domain). */
export function nodeProto(opType: string, inputs: string[], outputs: string[], name = "", attrs: Bytes[] = []): Bytes {
  const n = new Bytes();
  for (const s of inputs) n.len(1, s);
  for (const s of outputs) n.len(2, s);
  if (name) n.len(3, name);
  n.len(4, opType);
  for (const a of attrs) n.len(5, a);
  return n;
}

/** A float32 TensorProto with raw data. */
export function floatTensorOf(name: string, dims: number[], values: number[]): Bytes {
  const t = new Bytes();
  for (const d of dims) t.int(1, d);
  t.int(2, 1).len(8, name);
  return t.len(9, new Uint8Array(new Float32Array(values).buffer));
}

/** A GRAPH attribute. */
export function graphAttr(name: string, graph: Bytes): Bytes {
  return new Bytes().len(1, name).len(6, graph).int(20, 5);
}

/** A ModelProto (IR 8, default opset `opset`) around a GraphProto's bytes. */
export function modelOf(graph: Bytes, opset = 13): Uint8Array {
  return new Bytes().int(1, 8).len(2, "tensorcast-test").len(7, graph).len(8, new Bytes().len(1, "").int(2, opset)).bytes().slice();
}

/**
 * x (float32 [2]) -> `n` Relu nodes in a chain -> y. Valid (onnx.checker accepts it); 4 MB at
 * 200,001 nodes.
 */
export function chainModel(n: number): Uint8Array {
  const g = new Bytes();
  const label = (k: number): string => (k === 0 ? "x" : k === n ? "y" : `v${k}`);
  for (let k = 0; k < n; k++) g.len(1, nodeProto("Relu", [label(k)], [label(k + 1)]));
  g.len(2, "chain").len(11, valueInfo("x")).len(12, valueInfo("y"));
  return modelOf(g);
}

/** x -> Relu -> y, with `count` empty value_info entries (2 bytes each) after the outputs. */
export function valueInfoFlood(count: number): Uint8Array {
  const g = new Bytes().len(1, nodeProto("Relu", ["x"], ["y"])).len(2, "flood").len(11, valueInfo("x")).len(12, valueInfo("y"));
  g.repeat(Uint8Array.of(13 * 8 + 2, 0), count);
  return modelOf(g);
}

/** x -> Relu -> y, where the Relu holds `count` empty attributes (2 bytes each). */
export function attributeFlood(count: number): Uint8Array {
  const node = nodeProto("Relu", ["x"], ["y"]).repeat(Uint8Array.of(5 * 8 + 2, 0), count);
  const g = new Bytes().len(1, node).len(2, "flood").len(11, valueInfo("x")).len(12, valueInfo("y"));
  return modelOf(g);
}

/**
 * An If whose branches each hold a float32 initializer named `w`, like the main graph's: onnx.checker
 * and onnxruntime accept the shadowing. y = If(c, then: x + w_then, else: x * w_else) + w_main,
 * with a Loop-free second level: the then branch nests another If whose branches shadow `w` again.
 * Inputs: c (bool []), x (float32 [2]); output y (float32 [2]). `weights` maps each `w`'s values
 * (to build the reference model on weights cast to a type and back).
 */
export function shadowedIfModel(weights: (values: number[]) => number[] = (v) => v): Uint8Array {
  const floatTensor = (name: string, dims: number[], values: number[]): Bytes => floatTensorOf(name, dims, weights(values));
  const body = (name: string, op: string, values: number[], nested?: Bytes): Bytes => {
    const g = new Bytes();
    if (nested) {
      g.len(1, nodeProto(op, ["x", "w"], ["t0"], `${name}_op`));
      g.len(1, nodeProto("If", ["c"], [`${name}_out`], `${name}_if`, [graphAttr("then_branch", nested), graphAttr("else_branch", leaf(`${name}_e`, "Sub", [5, 6], "t0"))]));
    } else g.len(1, nodeProto(op, ["x", "w"], [`${name}_out`], `${name}_op`));
    g.len(2, name).len(5, floatTensor("w", [2], values)).len(12, valueInfo(`${name}_out`));
    return g;
  };
  const leaf = (name: string, op: string, values: number[], from = "x"): Bytes =>
    new Bytes().len(1, nodeProto(op, [from, "w"], [`${name}_out`], `${name}_op`)).len(2, name).len(5, floatTensor("w", [2], values)).len(12, valueInfo(`${name}_out`));
  const thenBranch = body("then", "Add", [1.5, -2.25], leaf("then_t", "Mul", [3, 0.5], "t0"));
  const elseBranch = body("else", "Mul", [0.1, 7]);
  return ifModel(thenBranch, elseBranch, floatTensor("w", [2], [0.25, -1]));
}

/**
 * y = If(c, then, else) + w, the main graph holding `w`: inputs c (bool []) and x (float32 [2]),
 * output y (float32 [2]).
 */
export function ifModel(thenBranch: Bytes, elseBranch: Bytes, w: Bytes): Uint8Array {
  const g = new Bytes()
    .len(1, nodeProto("If", ["c"], ["z"], "if", [graphAttr("then_branch", thenBranch), graphAttr("else_branch", elseBranch)]))
    .len(1, nodeProto("Add", ["z", "w"], ["y"], "add"))
    .len(2, "main")
    .len(5, w)
    .len(11, valueInfo("c", 9, []))
    .len(11, valueInfo("x"))
    .len(12, valueInfo("y"));
  return modelOf(g);
}
