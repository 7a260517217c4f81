/**
 * The models the streamed quantizer's tests build (issue 26 point 4): the same graph with its
 * weights inline (quantizeModel's input) or in a side file (quantizeModelFile's), written field by
 * field with test/support/protobuf.ts.
 */
import { closeSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { W } from "../support/protobuf.js";
import { randomFloat32 } from "./helpers.js";

/** One float32 initializer: inline in the model, or in the side file. */
export interface Weight {
  readonly name: string;
  readonly dims: readonly number[];
  readonly external: boolean;
  /** Its raw bytes, or a writer of them in chunks (big weights). */
  readonly bytes: Uint8Array | ((write: (chunk: Uint8Array) => void) => void);
}

/** A ValueInfoProto of a tensor type: elem_type and dims (numbers, or names of symbolic dims). */
export const valueInfo = (name: string, elem: number, dims: readonly (number | string)[]): W => {
  const shape = new W();
  for (const d of dims) shape.len(1, typeof d === "number" ? new W().int(1, d) : new W().len(2, d));
  return new W().len(1, name).len(2, new W().len(1, new W().int(1, elem).len(2, shape)));
};

/** A NodeProto: inputs, outputs, name, op_type, then attributes. */
export const node = (op: string, inputs: readonly string[], outputs: readonly string[], name: string, attrs: W[] = []): W => {
  const n = new W();
  for (const i of inputs) n.len(1, i);
  for (const o of outputs) n.len(2, o);
  n.len(3, name).len(4, op);
  for (const a of attrs) n.len(5, a);
  return n;
};

/**
 * The model: `nodes`, initializers `weights` (the external ones' data in `dataName` beside the
 * model, each at a 64-byte aligned offset), graph inputs and outputs as given. Writes the side
 * file when `dir` is given; returns the model's bytes.
 */
export function weightModel(
  nodes: readonly W[], weights: readonly Weight[], inputs: readonly W[], outputs: readonly W[],
  opts: { dir?: string; dataName?: string; inline?: boolean } = {},
): Uint8Array {
  const dataName = opts.dataName ?? "model.data";
  const fd = opts.dir !== undefined ? openSync(join(opts.dir, dataName), "w") : undefined;
  let at = 0;
  const graph = new W();
  for (const n of nodes) graph.len(1, n);
  graph.len(2, "streamed");
  try {
    for (const w of weights) {
      const t = new W();
      for (const d of w.dims) t.int(1, d);
      t.int(2, 1).len(8, w.name);
      const bytes = w.bytes;
      if (w.external && !opts.inline) {
        const start = Math.ceil(at / 64) * 64;
        let length = 0;
        const write = (chunk: Uint8Array): void => {
          if (fd !== undefined) writeSync(fd, chunk, 0, chunk.length, start + length);
          length += chunk.length;
        };
        if (typeof bytes === "function") bytes(write);
        else write(bytes);
        at = start + length;
        const entry = (k: string, v: string): W => new W().len(1, k).len(2, v);
        t.len(13, entry("location", dataName)).len(13, entry("offset", String(start))).len(13, entry("length", String(length))).int(14, 1);
      } else {
        const parts: Uint8Array[] = [];
        if (typeof bytes === "function") bytes((c) => parts.push(c.slice()));
        else parts.push(bytes);
        const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        parts.reduce((p, c) => (all.set(c, p), p + c.length), 0);
        t.len(9, all);
      }
      graph.len(5, t);
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  for (const i of inputs) graph.len(11, i);
  for (const o of outputs) graph.len(12, o);
  return new W().int(1, 8).len(2, "tensorcast-test").len(7, graph).len(8, new W().len(1, "").int(2, 17)).bytes();
}

/**
 * A small transformer-like model: Gather of an embedding, MatMuls (one B read twice, one inline,
 * one with an odd N), an Add of a small bias. `external`: emb, w1 and w3 in model.data.
 */
export function streamedModel(dir: string | undefined, inline: boolean): Uint8Array {
  const weights: Weight[] = [
    { name: "emb", dims: [100, 64], external: true, bytes: randomFloat32(6400, 1, 2) },
    { name: "w1", dims: [64, 48], external: true, bytes: randomFloat32(64 * 48, 2, 0.2) },
    { name: "w2", dims: [48, 40], external: false, bytes: randomFloat32(48 * 40, 3, 0.1) },
    { name: "w3", dims: [48, 33], external: true, bytes: randomFloat32(48 * 33, 4, 0.3) },
    { name: "bias", dims: [48], external: false, bytes: randomFloat32(48, 5, 0.5) },
  ];
  const nodes = [
    node("Gather", ["emb", "ids"], ["g"], "gather"),
    node("MatMul", ["x", "w1"], ["h1"], "mm1"),
    node("MatMul", ["g", "w1"], ["h1b"], "mm1b"),
    node("Add", ["h1", "bias"], ["h2"], "add"),
    node("MatMul", ["h2", "w2"], ["y"], "mm2"),
    node("MatMul", ["h1b", "w3"], ["z"], "mm3"),
  ];
  return weightModel(nodes, weights, [valueInfo("x", 1, ["n", 64]), valueInfo("ids", 7, [3])], [valueInfo("y", 1, ["n", 40]), valueInfo("z", 1, [3, 33])], { dir, inline });
}

/** Writes dir/model.onnx and dir/model.data (streamedModel); returns the model's path. */
export function writeStreamedModel(dir: string): string {
  const path = join(dir, "model.onnx");
  writeFileSync(path, streamedModel(dir, false));
  return path;
}

/**
 * A float32 weight [k, n] whose values look like a trained layer's (about N(0, 0.02), a few larger),
 * different in every row, generated a block of rows at a time.
 */
export function weight(name: string, k: number, n: number, external: boolean, seed: number): Weight {
  return {
    name, dims: [k, n], external,
    bytes: (write) => {
      const rows = Math.max(1, Math.floor((4 * 2 ** 20) / (4 * n)));
      const chunk = new Float32Array(rows * n);
      let s = seed >>> 0;
      for (let r = 0; r < k; r += rows) {
        const m = Math.min(rows, k - r);
        for (let i = 0; i < m * n; i++) {
          s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
          // The sum of two uniforms: a triangular bump, scaled to a layer's spread.
          const u = (s & 0xffff) / 65536 + (s >>> 16) / 65536 - 1;
          chunk[i] = u * 0.035 * (i % 997 === 0 ? 8 : 1);
        }
        write(new Uint8Array(chunk.buffer, 0, 4 * m * n));
      }
    },
  };
}

/** A chain of MatMuls x -> h0 -> h1 ... over `shapes`; external weights go to DIR/NAME.data. */
export function writeChain(dir: string, name: string, shapes: readonly (readonly [number, number])[], external: boolean): string {
  const weights = shapes.map(([k, n], l) => weight(`w${l}`, k, n, external, 17 + l));
  const nodes = shapes.map((_, l) => node("MatMul", [l === 0 ? "x" : `h${l - 1}`, `w${l}`], [`h${l}`], `mm${l}`));
  const path = join(dir, `${name}.onnx`);
  const io = [[valueInfo("x", 1, ["n", shapes[0][0]])], [valueInfo(`h${shapes.length - 1}`, 1, ["n", shapes[shapes.length - 1][1]])]];
  writeFileSync(path, weightModel(nodes, weights, io[0], io[1], { dir, dataName: `${name}.data`, inline: !external }));
  return path;
}
