/**
 * Only coded errors: every function of the five entry points (tensorcast, tensorcast/web,
 * tensorcast/node, tensorcast/onnx, tensorcast/gguf), the Tensor, Arena and TensorFile methods
 * among them, called with a hostile value in each argument position, returns, or throws (rejects
 * with) a TensorcastError: never a TypeError from inside, Node's ERR_INVALID_ARG_TYPE, a
 * RangeError, or a UsageError. Hostile: the plain wrong values of entry-points.test.ts, detached
 * and shrunk buffers, proxies whose every trap throws, objects whose getters throw, huge and
 * negative numbers and bigints, symbols, long and NUL-holding strings, objects of the wrong shape.
 * An exception the caller's own object raises when touched (its getter or trap throws, or it is a
 * revoked proxy) may also pass through as it is, unchanged: it is theirs, not tensorcast's (the test
 * checks it is the very object thrown, or the engine's "revoked" TypeError).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as core from "../src/index.js";
import * as web from "../src/web/index.js";
import * as node from "../src/node/index.js";
import * as onnx from "../src/onnx/index.js";
import * as gguf from "../src/gguf/index.js";
import { createArena, Tensor, TensorcastError } from "../src/index.js";
import { GOOD as CORE_GOOD, t, WRONG } from "./support/api-args.js";
import { buildModel } from "./support/onnx-model.js";

/** What a hostile getter or trap throws: the caller's own exception. */
class CallersOwn extends Error {}
const own = (what: string): never => {
  throw new CallersOwn(what);
};

function detachedBytes(): Uint8Array {
  const u = new Uint8Array(8);
  structuredClone(u.buffer, { transfer: [u.buffer] });
  return u;
}

function shrunkBytes(): Uint8Array {
  const b = new (ArrayBuffer as unknown as new (n: number, o: object) => ArrayBuffer & { resize(n: number): void })(8, { maxByteLength: 16 });
  const u = new Uint8Array(b, 0, 8);
  b.resize(0);
  return u;
}

function shrunkTensor(): Tensor {
  const b = new (ArrayBuffer as unknown as new (n: number, o: object) => ArrayBuffer & { resize(n: number): void })(8, { maxByteLength: 16 });
  const x = Tensor.fromStorage(new Float32Array(b, 0, 2), "float32", [2]);
  b.resize(4);
  return x;
}

const TRAPS = ["get", "set", "has", "ownKeys", "getOwnPropertyDescriptor", "getPrototypeOf", "defineProperty", "deleteProperty", "apply", "construct", "isExtensible", "preventExtensions", "setPrototypeOf"];
const everyTrapThrows = new Proxy(function () {}, Object.fromEntries(TRAPS.map((k) => [k, () => own(`trap ${k}`)])));
const revoked = (() => {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
})();
const getterThrows = new Proxy({}, { get: () => own("get") });
const lengthThrows = new Proxy([1, 2], { get: (target, key) => (key === "length" ? own("length") : Reflect.get(target, key)) });
let deep: unknown = [];
for (let i = 0; i < 100_000; i++) deep = [deep];

const HOSTILE: readonly unknown[] = [
  ...WRONG,
  detachedBytes(), shrunkBytes(), shrunkTensor(), new Float64Array(0), new DataView(new ArrayBuffer(4)), new ArrayBuffer(4),
  everyTrapThrows, revoked, getterThrows, lengthThrows,
  2 ** 53 + 2, -(2 ** 60), Number.MAX_VALUE, -0, Infinity, -Infinity, 2n ** 70n, -5n,
  "", "\0", "a".repeat(100_000), "/nonexistent/tensorcast/x.safetensors",
  { length: -1 }, { length: 2 ** 53 }, { dtype: 5, shape: "x", data: 7 }, new Map([[1, 2]]), new Date(0), Object.create(null), [null], [undefined, -1],
  deep, Symbol.iterator, (a: unknown, b: unknown, c: unknown) => [a, b, c],
  { [Symbol.toPrimitive]: () => own("toPrimitive"), toString: () => own("toString"), valueOf: () => own("valueOf") },
];

// ---- Files the node functions can read, in a scratch folder that is also the working directory ----

const dir = mkdtempSync(join(tmpdir(), "tensorcast-hostile-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
process.chdir(dir);
const st = join(dir, "in.safetensors");
writeFileSync(st, node.exampleCheckpoint());
const onnxModel = join(dir, "m.onnx");
writeFileSync(onnxModel, buildModel({
  inputs: [{ name: "x", elemType: 1, shape: [2] }], outputs: [{ name: "y", elemType: 1, shape: [2] }],
  nodes: [{ opType: "Relu", inputs: ["x"], outputs: ["y"] }], opset: 17,
}));
const ckpt = join(dir, "ckpt");
mkdirSync(ckpt);
writeFileSync(join(ckpt, "model-00001-of-00001.safetensors"), node.exampleCheckpoint());
const exampleNames = node.exampleTensors().map((e) => e.name);
writeFileSync(join(ckpt, "model.safetensors.index.json"), JSON.stringify({
  metadata: {}, weight_map: Object.fromEntries(exampleNames.map((n) => [n, "model-00001-of-00001.safetensors"])),
}));
const conformanceCase = join(dir, "case");
mkdirSync(join(conformanceCase, "test_data_set_0"), { recursive: true });
writeFileSync(join(conformanceCase, "model.onnx"), buildModel({
  inputs: [{ name: "x", elemType: 1, shape: [2] }], outputs: [{ name: "y", elemType: 10, shape: [2] }],
  nodes: [{ opType: "Cast", inputs: ["x"], outputs: ["y"], attributes: [{ name: "to", type: "INT", i: 10 }] }], opset: 21,
}));
writeFileSync(join(conformanceCase, "test_data_set_0", "input_0.pb"), core.encodeTensorProto(t, { name: "x" }));
writeFileSync(join(conformanceCase, "test_data_set_0", "output_0.pb"), core.encodeTensorProto(core.cast(t, "float16"), { name: "y" }));
const SAFETENSORS_HEADER = new TextEncoder().encode('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}');
const NPY_HEADER = new TextEncoder().encode("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n");
const quietIO = { stdout: { write: () => true }, stderr: { write: () => true } };
// A GGUF file of gguf-py's, for the GGUF functions' good arguments.
const ggufPath = join(dir, "small.gguf");
const ggufBytes = readFileSync(new URL("../../test/fixtures/gguf/files/small.gguf", import.meta.url));
writeFileSync(ggufPath, ggufBytes);
const ggufFile = await gguf.readGguf(gguf.bytesSource(new Uint8Array(ggufBytes)), { name: "small.gguf" });
const ggufModel = gguf.ggufModel([ggufFile]);
const ggufRecord = (await gguf.ggufRecords(ggufModel).next()).value as gguf.GgufRecord;
const GGUF_META: gguf.GgufMetadataEntry[] = [{ key: "general.architecture", type: "string", value: "llama" }];
const ggufTensors = (): gguf.GgufTensorToWrite[] => [{ name: "w", ggmlType: "Q8_0", dims: [32], data: new Uint8Array(34) }];
let outputs = 0;
/** A fresh output path each call, so no call finds the last one's output. */
const out = (ext: string): string => join(dir, `out${outputs++}${ext}`);

type Fn = (...a: unknown[]) => unknown;
/** [entry, name, function, good arguments (a function: made fresh per call)]. */
type Entry = [string, string, Fn, () => readonly unknown[]];

function entries(): Entry[] {
  const list: Entry[] = [];
  const arena = createArena(1 << 16);
  const coreFns: [string, Fn][] = [];
  for (const [name, v] of Object.entries(core)) {
    if (typeof v !== "function" || name === "TensorcastError" || name === "Tensor") continue;
    coreFns.push([name, v as Fn]);
  }
  for (const m of ["fromValues", "fromBytes", "fromStorage", "zeros"] as const) coreFns.push([`Tensor.${m}`, (...a) => (Tensor[m] as Fn)(...a)]);
  for (const [name, f] of coreFns) list.push(["tensorcast", name, f, () => CORE_GOOD[name]]);
  // Methods of what the functions return.
  list.push(["tensorcast", "Tensor#bytes", () => t.bytes(), () => []]);
  list.push(["tensorcast", "Tensor#toValues", () => t.toValues(), () => []]);
  list.push(["tensorcast", "Arena#zeros", (...a) => arena.zeros(...(a as [never, never])), () => ["float16", [2]]]);
  list.push(["tensorcast", "Arena#from", (...a) => arena.from(...(a as [never])), () => [t]]);
  list.push(["tensorcast", "Arena#cast", (...a) => arena.cast(...(a as [never, never, never])), () => [t, "float16", {}]]);

  const goodWeb: Record<string, () => readonly unknown[]> = {
    castAsync: () => [t, "float16", {}], castIntoAsync: () => [t, Tensor.zeros("float16", [2]), {}], sharedZeros: () => ["float16", [2]],
    closeCastAsyncPool: () => [], setCastWorkerUrl: () => [undefined],
    useQuantizeThread: () => [false], quantizeThreadChunks: () => [],
  };
  const goodOnnx: Record<string, () => readonly unknown[]> = {
    convertModelPrecision: () => [buildModel({ inputs: [{ name: "x", elemType: 1 }], outputs: [{ name: "y", elemType: 1 }], nodes: [{ opType: "Relu", inputs: ["x"], outputs: ["y"] }], opset: 17 }), { to: "float16" }],
    quantizeModel: () => [buildModel({ inputs: [{ name: "x", elemType: 1 }], outputs: [{ name: "y", elemType: 1 }], nodes: [{ opType: "Relu", inputs: ["x"], outputs: ["y"] }], opset: 17 }), { mode: "q4" }],
  };
  /** A fresh model folder (onnx/model.onnx) per call: the folder form writes its variants beside it. */
  const modelFolder = (): string => {
    const d = out("-folder");
    mkdirSync(join(d, "onnx"), { recursive: true });
    writeFileSync(join(d, "onnx", "model.onnx"), readFileSync(onnxModel));
    return d;
  };
  const goodNode: Record<string, () => readonly unknown[]> = {
    main: () => [["types"], quietIO], castValues: () => [["1.5"], { to: "float16" }], renderCastReport: () => [node.castValues(["1.5"], { to: "float16" })],
    typeRows: () => [], renderTypes: () => [], exampleReports: () => [], packageVersion: () => [],
    compareTensors: () => [t, t], findCases: () => [dir], runCase: () => [conformanceCase], totals: () => [[]],
    convertFile: () => [st, out(".safetensors"), { to: "float16" }],
    selectTensors: () => [undefined, core.dtype("float16"), {}], // the file is filled in below (it must be open)
    convertModelFile: () => [onnxModel, out(".onnx"), { to: "float16" }],
    quantizeModelFile: () => [onnxModel, out(".onnx"), { mode: "q4" }],
    quantizeModelFolder: () => [modelFolder(), { modes: ["q4"] }],
    convertCheckpoint: () => [ckpt, out(""), { to: "float16" }],
    indexCheckpoint: () => [ckpt, { force: true }],
    parseShardSlice: () => ["0/2"], parseShardSize: () => ["5GB"], sliceShards: () => [["a", "b"], { index: 0, count: 2 }],
    readCheckpoint: () => [ckpt], openCheckpoint: () => [ckpt], openTensorSource: () => [st, {}],
    encodeIndex: () => [{}, new Map([["a", "s.safetensors"]]), 4],
    inspectFile: () => [st, {}], diffFiles: () => [st, st, {}], exampleCheckpoint: () => [], exampleTensors: () => [],
    openTensorFile: () => [st, {}], formatOfPath: () => ["a.npy"],
    encodeSafetensorsHeader: () => [[{ name: "a", dtype: core.dtype("float32"), shape: [2], size: 2, byteLength: 8 }]],
    parseSafetensorsHeader: () => [SAFETENSORS_HEADER, 8 + SAFETENSORS_HEADER.length + 8, "f"],
    encodeNpyHeader: () => [core.dtype("float32"), [2]],
    parseNpyHeader: () => [NPY_HEADER, { version: 1, headerStart: 10 }, 10 + NPY_HEADER.length + 8, "f.npy", "f"],
    castAsync: goodWeb.castAsync, castIntoAsync: goodWeb.castIntoAsync, sharedZeros: goodWeb.sharedZeros, closeCastAsyncPool: () => [],
    useQuantizeThread: () => [false], quantizeThreadChunks: () => [],
    openGguf: () => [ggufPath], readGgufFile: () => [ggufPath],
  };
  const goodGguf: Record<string, () => readonly unknown[]> = {
    bytesSource: () => [new Uint8Array(ggufBytes), "small.gguf"], blobSource: () => [new Blob([new Uint8Array(ggufBytes)]), "small.gguf"],
    readGguf: () => [gguf.bytesSource(new Uint8Array(ggufBytes)), { name: "small.gguf" }], isGguf: () => [new Uint8Array(ggufBytes.subarray(0, 8))],
    ggufValue: () => [ggufFile, "general.architecture"], ggufModel: () => [[ggufFile], "small.gguf"],
    splitNameOf: () => ["m-00001-of-00002.gguf"], splitPaths: () => ["m", 2], splitCountOf: () => [ggufFile],
    ggufRecords: () => [ggufModel], readGgufBlocks: () => [ggufModel, ggufModel.tensors[0], 0, 1], ggufTensor: () => [ggufRecord, "bfloat16"],
    writeGguf: () => [{ write: () => undefined }, GGUF_META, ggufTensors()], layoutGguf: () => [GGUF_META, ggufTensors()], ggmlDims: () => [[2, 3], true],
    ggmlType: () => ["q4_k"], ggmlTypeOfId: () => [12], ggmlRowBytes: () => [gguf.ggmlType("Q4_K"), 256],
    dequantizeGgml: () => ["Q8_0", new Uint8Array(34)], quantizeRows: () => ["Q8_0", new Float32Array(32), 32],
    quantizeRowsInto: () => ["Q8_0", new Float32Array(32), 32, new Uint8Array(34)],
    canQuantize: () => [gguf.ggmlType("IQ2_XS"), true], quantizableTypes: () => [],
  };
  for (const [entry, mod, good] of [["tensorcast/web", web, goodWeb], ["tensorcast/onnx", onnx, goodOnnx], ["tensorcast/node", node, goodNode], ["tensorcast/gguf", gguf, goodGguf]] as const) {
    for (const [name, v] of Object.entries(mod)) {
      if (typeof v !== "function" || name === "UsageError") continue;
      list.push([entry, name, v as Fn, good[name] ?? (() => assert.fail(`${entry}: no good arguments for ${name}: add them`))]);
    }
  }
  return list;
}

/** The outcome of one call: "ok", "coded", "own" (the caller's exception, passed through), or what escaped. */
async function outcome(f: Fn, args: readonly unknown[]): Promise<string> {
  try {
    let r = f(...args);
    if (r && typeof (r as { then?: unknown }).then === "function") {
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        r = await Promise.race([r, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no answer in 20 s")), 20_000)))]);
      } finally {
        clearTimeout(timer);
      }
    }
    // An opened file (openTensorFile, openCheckpoint, readGgufFile, ...) is closed again: Node 26
    // makes a FileHandle left to the garbage collector an uncaught error.
    if (r && typeof r === "object" && typeof (r as { close?: unknown }).close === "function" && ("tensors" in r || "records" in r)) await (r as unknown as { close(): Promise<void> }).close();
    return "ok";
  } catch (e) {
    if (e instanceof TensorcastError) return "coded";
    if (e instanceof CallersOwn) return "own";
    // A revoked proxy throws the engine's TypeError on every touch, as a throwing trap would.
    if (e instanceof TypeError && args.includes(revoked) && /revoked/.test(e.message)) return "own";
    return `${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 120)}`;
  }
}

test("the issue's cases: a detached Uint8Array and convertFile(null) are TensorcastErrors with their codes", async () => {
  for (const [name, f] of [
    ["decodeModel", () => core.decodeModel(detachedBytes())],
    ["decodeTensorProto", () => core.decodeTensorProto(detachedBytes())],
    ["convertModelPrecision", () => onnx.convertModelPrecision(detachedBytes(), { to: "float16" })],
    ["parseSafetensorsHeader", () => node.parseSafetensorsHeader(detachedBytes(), 100, "f")],
  ] as const) {
    assert.throws(f, (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_DATA" && /detached/.test(e.message), name);
  }
  await assert.rejects(node.convertFile(null as never, "out.safetensors", { to: "float16" }), (e: unknown) =>
    e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && /convertFile's input must be a file path .* got null/.test(e.message));
  await assert.rejects(node.inspectFile("a\0b"), (e: unknown) => e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE" && /a string holding NUL/.test(e.message));
  // The CLI keeps its usage error for a value cast does not accept; the library says PARSE_ERROR.
  assert.throws(() => node.castValues(["abc"], { to: "float16" }), (e: unknown) => e instanceof TensorcastError && e.code === "PARSE_ERROR");
  let err = "";
  const code = await node.main(["cast", "--to", "float16", "abc"], { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) } });
  assert.equal(code, 2, err);
  assert.match(err, /"abc" is not a value cast accepts/);
});

test("every function of the five entry points succeeds with its good arguments", async () => {
  for (const [entry, name, f, good] of entries()) {
    if (name === "selectTensors") continue;
    assert.equal(await outcome(f, good()), "ok", `${entry} ${name}`);
  }
});

test("every function of the five entry points, given a hostile value in any argument, answers or throws a TensorcastError", async () => {
  const escaped: string[] = [];
  const counts = { calls: 0, ok: 0, coded: 0, own: 0 };
  const file = await node.openTensorFile(st);
  try {
    const all = entries();
    all.push(["tensorcast/node", "TensorFile#tensors[0].read", (...a) => file.tensors[0].read(...(a as [number, number])), () => [0, 2]]);
    for (const [entry, name, f, goodArgs] of all) {
      const good = name === "selectTensors" ? [file, core.dtype("float16"), {}] : goodArgs();
      const positions = Math.max(good.length, f.length, 1);
      for (let k = 0; k < positions; k++) {
        for (const h of HOSTILE) {
          const args = (name === "selectTensors" ? good : goodArgs()).slice();
          args[k] = h;
          counts.calls++;
          const o = await outcome(f, args);
          if (o === "ok" || o === "coded" || o === "own") counts[o]++;
          else escaped.push(`${entry} ${name} argument ${k} = ${label(h)}: ${o}`);
        }
      }
    }
  } finally {
    await file.close();
    await node.closeCastAsyncPool();
    await web.closeCastAsyncPool();
  }
  console.log(`hostile API sweep: ${counts.calls} calls, ${counts.ok} answered, ${counts.coded} TensorcastError, ${counts.own} the caller's own exception, ${escaped.length} other`);
  if (escaped.length > 0) console.log(escaped.join("\n"));
  assert.deepEqual(escaped, []);
});

function label(h: unknown): string {
  if (typeof h === "symbol") return "a Symbol";
  if (h === everyTrapThrows) return "a proxy whose traps throw";
  if (h === revoked) return "a revoked proxy";
  if (h === getterThrows) return "a proxy whose getter throws";
  if (h === lengthThrows) return "an array whose length getter throws";
  if (h === deep) return "an array nested 100,000 deep";
  if (ArrayBuffer.isView(h)) return `a ${h.constructor.name} of ${h.byteLength} bytes`;
  if (h instanceof Tensor) return "a tensor whose buffer shrank";
  if (typeof h === "string") return h.length > 40 ? `a string of ${h.length}` : JSON.stringify(h);
  try {
    return typeof h === "object" && h !== null ? `an object (${Object.keys(h).join(", ")})` : String(h);
  } catch {
    return "an object";
  }
}
