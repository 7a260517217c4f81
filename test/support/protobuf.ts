/**
 * A minimal protobuf writer for tests, deliberately separate from src/ (a misunderstanding of the
 * format shared by the reader and the writer under test could not hide in both): messages are
 * built byte by byte, field by field, including what no valid writer emits.
 */

export class W {
  readonly out: number[] = [];

  /** A varint; negative numbers take 10 bytes (two's complement), as protobuf writes int32/int64. */
  varint(value: number | bigint): this {
    let v = BigInt.asUintN(64, BigInt(value));
    do {
      const low = Number(v & 0x7fn);
      v >>= 7n;
      this.out.push(v !== 0n ? low | 0x80 : low);
    } while (v !== 0n);
    return this;
  }
  tag(field: number, wire: number): this {
    return this.varint(field * 8 + wire);
  }
  int(field: number, value: number | bigint): this {
    return this.tag(field, 0).varint(value);
  }
  /** A length-delimited field: raw bytes, a UTF-8 string, or a nested message. */
  len(field: number, body: W | Uint8Array | number[] | string): this {
    const bytes = body instanceof W ? body.out : typeof body === "string" ? new TextEncoder().encode(body) : body;
    this.tag(field, 2).varint(bytes.length);
    return this.append(bytes);
  }
  float(field: number, x: number): this {
    this.tag(field, 5);
    this.out.push(...new Uint8Array(new Float32Array([x]).buffer));
    return this;
  }
  double(field: number, x: number): this {
    this.tag(field, 1);
    this.out.push(...new Uint8Array(new Float64Array([x]).buffer));
    return this;
  }
  /** A packed run of varints. */
  packed(field: number, values: (number | bigint)[]): this {
    const body = new W();
    for (const v of values) body.varint(v);
    return this.len(field, body);
  }
  push(...bytes: number[]): this {
    return this.append(bytes);
  }
  /** Bytes as they are (a loop: a spread of a long array would exceed the argument limit). */
  append(bytes: ArrayLike<number>): this {
    for (let i = 0; i < bytes.length; i++) this.out.push(bytes[i]);
    return this;
  }
  bytes(): Uint8Array {
    return new Uint8Array(this.out);
  }
}

/** A TensorProto with dims, data_type and optionally a name. */
export function tensorProto(dataType: number, dims: number[], name = ""): W {
  const w = new W();
  for (const d of dims) w.int(1, d);
  w.int(2, dataType);
  if (name) w.len(8, name);
  return w;
}

/** `n` start-group tags of `field`, then their `n` end-group tags. */
export function groups(n: number, field = 100): W {
  const w = new W();
  for (let i = 0; i < n; i++) w.tag(field, 3);
  for (let i = 0; i < n; i++) w.tag(field, 4);
  return w;
}

/**
 * A message nested many levels deep, built from the inside out by sizes alone, in linear time:
 * wrapping a W in a W copies it, so 20,000 levels built that way copy quadratically (minutes).
 * Each level is written outward from the body: `field(f)` wraps all that is there so far as field
 * f of a new message, `before` and `after` put bytes in front of it and behind it.
 * @example new Nest(new W().len(2, "x")).field(4).field(4).bytes() // two sequence-like wrappers
 */
export class Nest {
  private readonly front: number[][] = [];
  private readonly back: number[][] = [];
  private size: number;

  constructor(private readonly body: W) {
    this.size = body.out.length;
  }
  /** Everything so far becomes the length-delimited field `field` of the next level. */
  field(field: number): this {
    return this.before(new W().tag(field, 2).varint(this.size));
  }
  before(w: W): this {
    this.front.push(w.out);
    this.size += w.out.length;
    return this;
  }
  after(w: W): this {
    this.back.push(w.out);
    this.size += w.out.length;
    return this;
  }
  /** The size so far, in bytes. */
  get length(): number {
    return this.size;
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (let i = this.front.length - 1; i >= 0; i--) {
      out.set(this.front[i], at);
      at += this.front[i].length;
    }
    out.set(this.body.out, at);
    at += this.body.out.length;
    for (const b of this.back) {
      out.set(b, at);
      at += b.length;
    }
    return out;
  }
}

/**
 * A graph whose node is an If whose then_branch is a graph whose node is an If ..., `levels`
 * deep, the innermost graph holding `leaf`. Each level is three messages (graph, node, attribute).
 */
export function nestedIfs(levels: number, leaf: W = new W().len(2, "leaf")): Uint8Array {
  const n = new Nest(leaf);
  for (let i = 0; i < levels; i++) {
    n.field(6).before(new W().len(1, "then_branch").int(20, 5));
    n.field(5).before(new W().len(1, "c").len(2, `y${i}`).len(4, "If"));
    n.field(1).after(new W().len(2, `g${i}`));
  }
  return n.bytes();
}
