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
 * A graph whose node is an If whose then_branch is a graph whose node is an If ..., `levels`
 * deep, the innermost graph holding `leaf`. Each level is three messages (graph, node, attribute).
 * Built from the inside out by sizes alone, in linear time: wrapping 2,000 times would copy quadratically.
 */
export function nestedIfs(levels: number, leaf: W = new W().len(2, "leaf")): Uint8Array {
  const front: number[][] = [];
  const back: number[][] = [];
  let size = leaf.out.length;
  const prefix = (w: W): void => {
    front.push(w.out);
    size += w.out.length;
  };
  for (let i = 0; i < levels; i++) {
    prefix(new W().len(1, "then_branch").int(20, 5).tag(6, 2).varint(size));
    prefix(new W().len(1, "c").len(2, `y${i}`).len(4, "If").tag(5, 2).varint(size));
    const name = new W().len(2, `g${i}`);
    back.push(name.out);
    prefix(new W().tag(1, 2).varint(size + name.out.length));
    size += name.out.length;
  }
  return Uint8Array.from([...front.reverse(), leaf.out, ...back].flat());
}
