/**
 * The valid files the fuzzer mutates, per format: built with tensorcast's own encoders, built byte
 * by byte (test/support/protobuf.ts), and real files (NumPy's in test/fixtures/checkpoints, the
 * ONNX backend tests in test/fixtures/onnx-node and Debian's libonnx-testdata). Every seed must be
 * accepted by tensorcast and by its peer; the suite checks that before mutating them.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cast, Tensor } from "../../src/index.js";
import { encodeModel, encodeTensorProto } from "../../src/io/onnx/encode.js";
import type { OnnxModel } from "../../src/io/onnx/model.js";
import { encodeNpyHeader } from "../../src/node/io/npy.js";
import { safetensorsBytes } from "../node/helpers.js";
import { Rng } from "../support/rng.js";
import { nestedIfs, W } from "../support/protobuf.js";

export type Format = "safetensors" | "npy" | "pb" | "onnx";
export const FORMATS: readonly Format[] = ["safetensors", "npy", "pb", "onnx"];

export interface Seed {
  readonly name: string;
  readonly format: Format;
  readonly bytes: Uint8Array;
  /** The outcome of reading it when that is a refusal on purpose (a Fortran-order array), else it must be read. */
  readonly refusal?: string;
}

export const LIBONNX = "/usr/share/libonnx-testdata/data/node";

function floats(n: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  const f = new Float32Array(n);
  for (let i = 0; i < n; i++) f[i] = ((rng.u32() / 2 ** 32) * 2 - 1) * 8;
  return new Uint8Array(f.buffer);
}

function bytesOf(n: number, seed: number): Uint8Array {
  const rng = new Rng(seed);
  return Uint8Array.from({ length: n }, () => rng.u32() & 0xff);
}

const F32 = Tensor.fromBytes(floats(12, 1), "float32", [3, 4]);

function safetensorsSeeds(): Seed[] {
  const s = (name: string, bytes: Uint8Array): Seed => ({ name, format: "safetensors", bytes });
  return [
    s("several-dtypes", safetensorsBytes(
      [
        { name: "w", dtype: "float32", shape: [3, 4], bytes: F32.bytes() },
        { name: "h", dtype: "float16", shape: [3, 4], bytes: cast(F32, "float16").bytes() },
        { name: "b", dtype: "bfloat16", shape: [12], bytes: cast(F32, "bfloat16").bytes() },
        { name: "q", dtype: "float8e4m3fn", shape: [2, 6], bytes: cast(F32, "float8e4m3fn").bytes() },
        { name: "i", dtype: "int64", shape: [2], bytes: bytesOf(16, 2) },
        { name: "u", dtype: "uint8", shape: [5], bytes: bytesOf(5, 3) },
        { name: "flag", dtype: "bool", shape: [3], bytes: Uint8Array.of(0, 1, 1) },
      ],
      { format: "pt", note: "fuzz seed" },
    )),
    s("sub-byte", safetensorsBytes([
      { name: "f4", dtype: "float4e2m1", shape: [8], bytes: bytesOf(4, 4) },
      { name: "f6a", dtype: "float6e2m3", shape: [4], bytes: bytesOf(3, 5) },
      { name: "f6b", dtype: "float6e3m2", shape: [2, 2], bytes: bytesOf(3, 6) },
      { name: "e8m0", dtype: "float8e8m0", shape: [3], bytes: Uint8Array.of(0x7f, 0x80, 0x01) },
    ])),
    s("scalar-empty-complex", safetensorsBytes([
      { name: "scalar", dtype: "float64", shape: [], bytes: new Uint8Array(new Float64Array([Math.PI]).buffer) },
      { name: "empty", dtype: "float32", shape: [0, 3], bytes: new Uint8Array(0) },
      { name: "c", dtype: "complex64", shape: [2], bytes: floats(4, 7) },
      { name: "i8", dtype: "int8", shape: [4], bytes: bytesOf(4, 8) },
      { name: "fnuz", dtype: "float8e5m2fnuz", shape: [4], bytes: bytesOf(4, 9) },
    ], {})),
    s("one-tensor", safetensorsBytes([{ name: "only", dtype: "float32", shape: [2, 3], bytes: floats(6, 10) }])),
    { name: "example.safetensors", format: "safetensors", bytes: readFileSync(fixture("example.safetensors")) },
  ];
}

function fixture(name: string): string {
  return join(ROOT, "test", "fixtures", "checkpoints", name);
}

/** build/test/fuzz/ -> the repository root. */
export const ROOT = new URL("../../../", import.meta.url).pathname;

function npy(t: Tensor, shape = t.shape): Uint8Array {
  return Buffer.concat([encodeNpyHeader(t.dtype, shape), t.bytes()]);
}

/** A .npy file with the given header dict text and data, padded as NumPy pads (version 1.0). */
export function npyWithHeader(dict: string, data: Uint8Array, version = 1): Uint8Array {
  const prefix = version === 1 ? 10 : 12;
  const total = Math.ceil((prefix + dict.length + 1) / 64) * 64;
  const out = Buffer.alloc(total, 0x20);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]).copy(out, 0);
  if (version === 1) out.writeUInt16LE(total - prefix, 8);
  else out.writeUInt32LE(total - prefix, 8);
  Buffer.from(dict, version === 3 ? "utf8" : "latin1").copy(out, prefix);
  out[total - 1] = 0x0a;
  return Buffer.concat([out, data]);
}

function npySeeds(): Seed[] {
  const s = (name: string, bytes: Uint8Array): Seed => ({ name, format: "npy", bytes });
  const out: Seed[] = [
    s("f4", npy(F32)),
    s("f2", npy(cast(F32, "float16"))),
    s("i8", npy(Tensor.fromBytes(bytesOf(48, 11), "int64", [2, 3]))),
    s("u2-3d", npy(Tensor.fromBytes(bytesOf(24, 12), "uint16", [2, 3, 2]))),
    s("f8-scalar", npy(Tensor.fromValues([1.25], "float64", []))),
    s("bool", npyWithHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", Uint8Array.of(0, 1, 0, 1))),
    s("big-endian-f4", npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (3, 4), }", Buffer.from(F32.bytes()).swap32())),
    s("big-endian-i2", npyWithHeader("{'descr': '>i2', 'fortran_order': False, 'shape': (5,), }", bytesOf(10, 13))),
    s("fortran-1d", npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (12,), }", F32.bytes())),
    { ...s("fortran-2d", npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", F32.bytes())), refusal: "E:UNSUPPORTED_TYPE" },
    s("v2-c8", npyWithHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", floats(4, 14), 2)),
    s("v3-i1", npyWithHeader("{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }", bytesOf(4, 15), 3)),
    s("empty", npyWithHeader("{'descr': '<u4', 'fortran_order': False, 'shape': (0, 7), }", new Uint8Array(0))),
  ];
  for (const f of ["b1.npy", "c8.npy", "f2_big_endian.npy", "f4.npy", "f4_big_endian.npy", "f4_fortran.npy", "f4_v2.npy", "f4_v3.npy", "i8_scalar.npy", "u1_empty.npy"]) {
    out.push({ ...s(f, readFileSync(fixture(f))), refusal: f === "f4_fortran.npy" ? "E:UNSUPPORTED_TYPE" : undefined });
  }
  return out;
}

function pbSeeds(): Seed[] {
  const s = (name: string, bytes: Uint8Array): Seed => ({ name, format: "pb", bytes });
  const strings = Tensor.fromValues(["a", "héllo", "", "日本"], "string", [2, 2]);
  return [
    s("raw-f32", encodeTensorProto(F32, { name: "w" })),
    s("typed-f32", encodeTensorProto(F32, { name: "w", layout: "typed" })),
    s("typed-i64", encodeTensorProto(Tensor.fromBytes(bytesOf(32, 16), "int64", [4]), { name: "i", layout: "typed" })),
    s("typed-f16", encodeTensorProto(cast(F32, "float16"), { layout: "typed" })),
    s("typed-f64", encodeTensorProto(cast(F32, "float64"), { name: "d", layout: "typed" })),
    s("typed-u64", encodeTensorProto(Tensor.fromBytes(bytesOf(16, 17), "uint64", [2]), { layout: "typed" })),
    s("typed-bool", encodeTensorProto(Tensor.fromValues([true, false, true], "bool", [3]), { layout: "typed" })),
    s("typed-i8", encodeTensorProto(Tensor.fromBytes(bytesOf(6, 18), "int8", [2, 3]), { layout: "typed" })),
    s("raw-bf16", encodeTensorProto(cast(F32, "bfloat16"), { name: "b" })),
    s("raw-int4", encodeTensorProto(Tensor.fromBytes(bytesOf(3, 19), "int4", [6]), { name: "q" })),
    s("raw-e4m3", encodeTensorProto(cast(F32, "float8e4m3fn"), { name: "e" })),
    s("strings", encodeTensorProto(strings, { name: "s" })),
    s("scalar", encodeTensorProto(Tensor.fromValues([7], "int32", []), { name: "k" })),
    // Unpacked dims, data_type, then unpacked float_data, as old writers emitted them.
    s("unpacked-floats", new W().int(1, 2).int(2, 1).float(4, 1.5).float(4, -2).len(8, "u").bytes()),
    ...realPbs(),
  ];
}

/** A deterministic sample of the test suites' .pb inputs and outputs (typed fields, strings, bfloat16 as uint16, ...). */
function realPbs(): Seed[] {
  const out: Seed[] = [];
  for (const [root, every] of [[join(ROOT, "test", "fixtures", "onnx-node"), 9], [LIBONNX, 60]] as const) {
    if (!existsSync(root)) continue;
    const cases = readdirSync(root).filter((d) => d.startsWith("test_")).sort();
    cases.forEach((c, k) => {
      if (k % every !== 0) return;
      const set = join(root, c, "test_data_set_0");
      if (!existsSync(set)) return;
      for (const f of readdirSync(set).sort()) if (f.endsWith(".pb")) out.push({ name: `${c}/${f}`, format: "pb", bytes: readFileSync(join(set, f)) });
    });
  }
  return out;
}

function model(m: Omit<OnnxModel, "irVersion" | "opsetImports">, layout: "raw" | "typed" = "raw"): Uint8Array {
  return encodeModel({ irVersion: 8, opsetImports: [{ domain: "", version: 17 }], ...m }, { layout, producerName: "fuzz" });
}

function onnxSeeds(): Seed[] {
  const s = (name: string, bytes: Uint8Array): Seed => ({ name, format: "onnx", bytes });
  const h = cast(F32, "float16");
  const initializers = [
    { name: "w", tensor: F32 },
    { name: "h", tensor: h },
    { name: "i", tensor: Tensor.fromBytes(bytesOf(16, 20), "int64", [2]) },
  ];
  const graph = {
    name: "g",
    nodes: [
      { name: "c", opType: "Constant", domain: "", inputs: [], outputs: ["k"], attributes: [{ name: "value", type: "TENSOR" as const, value: Tensor.fromValues([2], "float32", [1]) }] },
      { name: "m", opType: "Mul", domain: "", inputs: ["w", "k"], outputs: ["y"], attributes: [] },
      { name: "a", opType: "Add", domain: "", inputs: ["x", "y"], outputs: ["z"], attributes: [] },
    ],
    initializers,
    inputs: [{ name: "x", elemType: 1, shape: [3, 4] }],
    outputs: [{ name: "z", elemType: 1, shape: [3, 4] }],
  };
  // An If whose branches hold an initializer and a Constant, built field by field (encodeModel
  // writes no GRAPH attributes): ModelProto { ir_version, opset_import, graph }.
  const branch = (name: string, value: number): W => new W()
    .len(1, new W().len(2, `${name}_out`).len(3, `${name}_c`).len(4, "Constant").len(5, new W().len(1, "value").len(5, new W().int(1, 1).int(2, 1).len(9, new Uint8Array(new Float32Array([value]).buffer))).int(20, 4)))
    .len(2, name)
    .len(5, new W().int(1, 2).int(2, 1).len(8, `${name}_init`).len(9, floats(2, value)))
    .len(12, new W().len(1, `${name}_out`).len(2, new W().len(1, new W().int(1, 1).len(2, new W().len(1, new W().int(1, 1))))));
  const ifModel = new W()
    .int(1, 8)
    .len(8, new W().len(1, "").int(2, 17))
    .len(7, new W()
      .len(1, new W().len(1, "cond").len(2, "out").len(3, "if").len(4, "If")
        .len(5, new W().len(1, "then_branch").len(6, branch("then", 1)).int(20, 5))
        .len(5, new W().len(1, "else_branch").len(6, branch("else", -1)).int(20, 5)))
      .len(2, "if-graph")
      .len(5, new W().int(2, 9).len(8, "cond").len(9, [1]))
      .len(12, new W().len(1, "out").len(2, new W().len(1, new W().int(1, 1).len(2, new W().len(1, new W().int(1, 1))))))).bytes();
  const out: Seed[] = [
    s("raw-initializers", model({ graph })),
    s("typed-initializers", model({ graph }, "typed")),
    s("if-subgraphs", ifModel),
    s("nested-ifs-40", new W().int(1, 8).len(8, new W().int(2, 17)).len(7, nestedIfs(30)).bytes()),
    s("string-initializer", model({ graph: { name: "g", nodes: [], inputs: [], outputs: [], initializers: [{ name: "s", tensor: Tensor.fromValues(["x", "yz"], "string", [2]) }, { name: "w", tensor: F32 }] } })),
    s("sub-byte-initializers", encodeModel({
      irVersion: 10, opsetImports: [{ domain: "", version: 21 }],
      graph: { name: "g", nodes: [], inputs: [], outputs: [], initializers: [
        { name: "q", tensor: Tensor.fromBytes(bytesOf(4, 21), "uint4", [8]) },
        { name: "e", tensor: cast(F32, "float8e5m2") },
        { name: "w", tensor: F32 },
      ] },
    })),
  ];
  for (const [root, every] of [[join(ROOT, "test", "fixtures", "onnx-node"), 6], [LIBONNX, 25]] as const) {
    if (!existsSync(root)) continue;
    const cases = readdirSync(root).filter((d) => d.startsWith("test_")).sort();
    cases.forEach((c, k) => {
      const path = join(root, c, "model.onnx");
      // Every subgraph-bearing model, and a regular sample of the rest.
      if ((k % every === 0 || /^test_(if|loop|scan|constant$)/.test(c)) && existsSync(path)) out.push(s(c, readFileSync(path)));
    });
  }
  return out;
}

/** Every seed's bytes as a plain Uint8Array of its own (a Buffer's slice() would share memory with it). */
export function seeds(): Record<Format, Seed[]> {
  const own = (list: Seed[]): Seed[] => list.map((s) => ({ ...s, bytes: new Uint8Array(s.bytes) }));
  return { safetensors: own(safetensorsSeeds()), npy: own(npySeeds()), pb: own(pbSeeds()), onnx: own(onnxSeeds()) };
}

export const EXTENSION: Record<Format, string> = { safetensors: "safetensors", npy: "npy", pb: "pb", onnx: "onnx" };

