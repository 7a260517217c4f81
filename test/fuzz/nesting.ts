/**
 * Deep nesting in every reader of nested text or messages (issue 24, point 4), as fuzz cases:
 * JSON (a sharded checkpoint's index.json, a safetensors header), the Python literal of an .npy
 * header, and protobuf (an .onnx model's subgraphs through `g` and `graphs` attributes, its nested
 * TypeProtos: sequence, optional and map; a .pb's groups). Each class has cases just inside each
 * limit, just past it, and far past it (200,000 levels), plus depths drawn at random; every case
 * must be accepted or refused cleanly (nesting.test.ts runs them through the CLI and the library).
 */
import { Nest, W, groups, nestedIfs } from "../support/protobuf.js";
import { random as mulberry32, randomFloat32, safetensorsBytes } from "../node/helpers.js";

/** One case: files to write into a fresh folder, and what to run on them. */
export interface NestingCase {
  readonly kind: NestingClass;
  readonly label: string;
  /** File name -> bytes; a name with a slash is in a subfolder. */
  readonly files: Readonly<Record<string, Uint8Array>>;
  /** CLI argument lists; "$D" is the case's folder, "$O" a fresh output path. */
  readonly cli: readonly (readonly string[])[];
  /** Library calls on the case's bytes ("decodeModel", "convertModelPrecision", "decodeTensorProto"). */
  readonly library: readonly ("decodeModel" | "convertModelPrecision" | "decodeTensorProto")[];
  /** The bytes the library calls take. */
  readonly bytes?: Uint8Array;
  /** True when the case is within every limit and must be accepted. */
  readonly within: boolean;
}

export type NestingClass = "index.json" | "safetensors header" | "npy header" | "onnx subgraphs" | "onnx types" | "pb groups";

/** `n` brackets deep, arrays or objects or mixed, as JSON text. */
function nestedJson(n: number, how: "arrays" | "objects" | "mixed"): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < n; i++) {
    const obj = how === "objects" || (how === "mixed" && i % 2 === 1);
    open.push(obj ? '{"k":' : "[");
    close.push(obj ? "}" : "]");
  }
  // The innermost object needs a value.
  return open.join("") + (how === "arrays" ? "" : "0") + close.reverse().join("");
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const SHARD = "model-00001-of-00001.safetensors";

function indexCase(depth: number, where: "metadata" | "extra key", how: "arrays" | "objects" | "mixed"): NestingCase {
  // The index object is level 1; metadata's object level 2 (its values start at 3), a top-level key's value at 2.
  const value = nestedJson(depth, how);
  const levels = depth + (where === "metadata" ? 2 : 1);
  const index = where === "metadata"
    ? `{"metadata": {"deep": ${value}}, "weight_map": {"w": "${SHARD}"}}`
    : `{"metadata": {}, "extra": ${value}, "weight_map": {"w": "${SHARD}"}}`;
  return {
    kind: "index.json", label: `index.json, ${where} nesting ${how} ${levels} levels`,
    files: { [`ckpt/${SHARD}`]: safetensorsBytes([{ name: "w", dtype: "float32", shape: [2], bytes: randomFloat32(2, 1, 2) }]), "ckpt/model.safetensors.index.json": enc(index) },
    cli: [["inspect", "$D/ckpt"], ["convert", "$D/ckpt", "--to", "float16", "-o", "$O"], ["diff", "$D/ckpt", "$D/ckpt"]],
    library: [], within: levels <= 127,
  };
}

function safetensorsCase(depth: number, where: "__metadata__" | "tensor field", how: "arrays" | "objects" | "mixed"): NestingCase {
  const value = nestedJson(depth, how);
  const header = where === "__metadata__"
    ? `{"__metadata__": ${value}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`
    : `{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "extra": ${value}}}`;
  const levels = depth + (where === "__metadata__" ? 1 : 2);
  const h = enc(header);
  const file = new Uint8Array(8 + h.length + 4);
  new DataView(file.buffer).setUint32(0, h.length, true);
  file.set(h, 8);
  return {
    kind: "safetensors header", label: `safetensors ${where} nesting ${how} ${levels} levels`,
    files: { "a.safetensors": file },
    cli: [["inspect", "$D/a.safetensors"], ["convert", "$D/a.safetensors", "--to", "float16", "-o", "$O.safetensors"], ["diff", "$D/a.safetensors", "$D/a.safetensors"]],
    // serde refuses a __metadata__ that is not strings whatever its depth; an unknown field is skipped when within the limit.
    library: [], within: where === "tensor field" && levels <= 127,
  };
}

function npyCase(depth: number): NestingCase {
  let shape = "(2,)";
  for (let i = 1; i < depth; i++) shape = `(${shape},)`;
  // Version 2.0 (a 4-byte header length, for the 100,000-level header), padded to 64 bytes as NumPy pads it.
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  h += " ".repeat((64 - ((12 + h.length + 1) % 64)) % 64) + "\n";
  const out = new Uint8Array(12 + h.length + 8);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 2, 0]);
  new DataView(out.buffer).setUint32(8, h.length, true);
  out.set(enc(h), 12);
  return {
    kind: "npy header", label: `.npy shape tuple nested ${depth} deep`,
    files: { "a.npy": out },
    cli: [["inspect", "$D/a.npy"], ["convert", "$D/a.npy", "--to", "float16", "-o", "$O.npy"]],
    // A nested tuple is never a shape NumPy accepts, but it must be refused cleanly.
    library: [], within: false,
  };
}

function model(graph: W): Uint8Array {
  return new W().int(1, 8).len(8, new W().len(1, "").int(2, 17)).len(7, graph).bytes();
}

const ONNX_CLI = [
  ["inspect", "$D/m.onnx"], ["convert", "$D/m.onnx", "--to", "float16", "-o", "$O.onnx"],
  ["convert", "$D/m.onnx", "--to", "float8e4m3fn", "-o", "$O.onnx"], ["diff", "$D/m.onnx", "$D/m.onnx"],
] as const;

function ifCase(levels: number, via: "g" | "graphs"): NestingCase {
  let bytes: Uint8Array;
  if (via === "g") bytes = model(new W().append(nestedIfs(levels)));
  else {
    // Loop-free: each level a node whose `graphs` attribute (field 11, type GRAPHS) holds the next graph.
    const g = new Nest(new W().len(2, "leaf"));
    for (let i = 0; i < levels; i++) {
      g.field(11).before(new W().len(1, "branches")).after(new W().int(20, 10));
      g.field(5).before(new W().len(2, `y${i}`).len(4, "Custom").len(7, "com.example"));
      g.field(1).after(new W().len(2, `g${i}`));
    }
    g.field(7).before(new W().int(1, 8).len(8, new W().len(1, "").int(2, 17)).len(8, new W().len(1, "com.example").int(2, 1)));
    bytes = g.bytes();
  }
  return { kind: "onnx subgraphs", label: `subgraphs through ${via} nested ${levels} deep (${levels * 3} messages)`, files: { "m.onnx": bytes }, cli: ONNX_CLI, library: ["decodeModel", "convertModelPrecision"], bytes, within: 3 * levels + 1 <= 100 };
}

function typeCase(levels: number, kind: "sequence" | "optional" | "map"): NestingCase {
  const nest = new Nest(new W().len(1, new W().int(1, 1)));
  for (let i = 0; i < levels; i++) {
    if (kind === "sequence") nest.field(1).field(4);
    else if (kind === "optional") nest.field(1).field(9);
    else nest.field(2).before(new W().int(1, 7)).field(5);
  }
  const t = nest.bytes();
  const g = new W().len(2, "g").len(11, new W().len(1, "x").len(2, t)).len(12, new W().len(1, "x").len(2, t));
  const bytes = model(g);
  // ModelProto > graph > input > type is level 3; each wrapper adds two levels.
  return { kind: "onnx types", label: `${kind} TypeProtos nested ${levels} deep`, files: { "m.onnx": bytes }, cli: ONNX_CLI, library: ["decodeModel", "convertModelPrecision"], bytes, within: 3 + 2 * levels + 1 <= 100 };
}

function pbCase(n: number): NestingCase {
  const bytes = new W().int(1, 1).int(2, 1).len(9, new Uint8Array(4)).append(groups(n).out).bytes();
  return {
    kind: "pb groups", label: `.pb TensorProto with ${n} nested unknown groups`, files: { "a.pb": bytes },
    cli: [["inspect", "$D/a.pb"], ["convert", "$D/a.pb", "--to", "float16", "-o", "$O.pb"]], library: ["decodeTensorProto"], bytes, within: n <= 100,
  };
}

/**
 * Every nesting case: the fixed depths around each limit, then `random` more per class at depths
 * drawn from [1, 4 x the limit] (seeded, so case N is the same file on every run).
 * @example nestingCases(5).filter((c) => c.kind === "index.json").length // 14
 */
export function nestingCases(random: number, far = true): NestingCase[] {
  // The cases far past each limit (100,000 levels and more) take minutes to build; `far` false
  // leaves them out (the everyday suite), the limits themselves are still crossed by one level.
  const f = <T>(deep: T): T[] => (far ? [deep] : []);
  const r = mulberry32(24);
  const depth = (limit: number): number => 1 + Math.floor((r() / 2 ** 32) * 4 * limit);
  const hows = ["arrays", "objects", "mixed"] as const;
  const out: NestingCase[] = [];
  for (const d of [125, 126, ...f(200_000)]) for (const where of ["metadata", "extra key"] as const) out.push(indexCase(d - (where === "metadata" ? 0 : -1), where, "arrays"));
  for (const how of hows) out.push(indexCase(126, "metadata", how));
  for (let i = 0; i < random; i++) out.push(indexCase(depth(127), i % 2 ? "metadata" : "extra key", hows[i % 3]));
  for (const d of [125, 126, ...f(200_000)]) for (const where of ["__metadata__", "tensor field"] as const) out.push(safetensorsCase(d, where, "arrays"));
  for (let i = 0; i < random; i++) out.push(safetensorsCase(depth(127), i % 2 ? "__metadata__" : "tensor field", hows[i % 3]));
  for (const d of [32, 33, ...f(100_000)]) out.push(npyCase(d));
  for (let i = 0; i < random; i++) out.push(npyCase(depth(32)));
  for (const lv of [32, 33, 34, ...f(5_000)]) for (const via of ["g", "graphs"] as const) out.push(ifCase(lv, via));
  for (let i = 0; i < random; i++) out.push(ifCase(depth(33), i % 2 ? "g" : "graphs"));
  for (const kind of ["sequence", "optional", "map"] as const) for (const lv of [48, 49, ...f(20_000)]) out.push(typeCase(lv, kind));
  for (let i = 0; i < random; i++) out.push(typeCase(depth(48), (["sequence", "optional", "map"] as const)[i % 3]));
  for (const n of [99, 100, 101, ...f(20_000)]) out.push(pbCase(n));
  for (let i = 0; i < random; i++) out.push(pbCase(depth(100)));
  return out;
}
