/**
 * Reshape: every version's type list and attributes, every official and observed case of onnx.md
 * section 5 (the spec's answer where onnxruntime is looser), every error naming the input shape,
 * the requested shape and the rule, the official backend vectors, zero copy for every type, and a
 * property test: a random compatible reshape and back is the identity.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { DTYPES, Tensor, type DTypeName } from "../../src/index.js";
import { RESHAPE_VERSIONS } from "../../src/ops/opsets.js";
import { LATEST_RESHAPE, reshape, reshapeVersion, type ShapeLike } from "../../src/ops/reshape.js";
import { decodeModel, opsetVersion } from "../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";
import { throwsCode } from "../support/assertions.js";
import { property } from "../support/suite.js";

// Compiled tests run from build/test/ops/; the fixtures stay in the source tree.
const FIXTURES = new URL("../../../test/fixtures/onnx-node/", import.meta.url);
/** The onnx 1.12 release of the same vectors (opset 14), from Debian's libonnx-testdata, when installed. */
const LIBONNX_1_12 = "/usr/share/libonnx-testdata/data/node/";

/** The type lists of onnx.md section 5, written out in full per version (not accumulated like src). */
const IR3: DTypeName[] = [
  "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
  "string", "complex64", "complex128",
];
const F8: DTypeName[] = ["float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"];
const RESHAPE_TYPES: Record<number, DTypeName[]> = {
  1: ["float16", "float32", "float64"],
  5: IR3,
  13: [...IR3, "bfloat16"],
  14: [...IR3, "bfloat16"],
  19: [...IR3, "bfloat16", ...F8],
  21: [...IR3, "bfloat16", ...F8, "uint4", "int4"],
  23: [...IR3, "bfloat16", ...F8, "uint4", "int4", "float4e2m1"],
  24: [...IR3, "bfloat16", ...F8, "uint4", "int4", "float4e2m1", "float8e8m0"],
  25: [...IR3, "bfloat16", ...F8, "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2"],
};

/** A float32 tensor 0, 1, 2, ... of the given shape. */
function iota(shape: number[]): Tensor<"float32"> {
  const size = shape.reduce((a, b) => a * b, 1);
  return Tensor.fromValues(Array.from({ length: size }, (_, i) => i), "float32", shape);
}

test("Reshape versions, their type lists and attributes", () => {
  assert.deepEqual(RESHAPE_VERSIONS.map((v) => v.version), [1, 5, 13, 14, 19, 21, 23, 24, 25]);
  for (const v of RESHAPE_VERSIONS) {
    assert.equal(v.op, "Reshape");
    assert.deepEqual([...v.types].sort(), [...RESHAPE_TYPES[v.version]].sort(), `Reshape-${v.version}`);
    const attrs = v.version === 1 ? ["consumed_inputs", "shape"] : v.version >= 14 ? ["allowzero"] : [];
    assert.deepEqual([...v.attributes].sort(), attrs, `Reshape-${v.version} attributes`);
  }
  assert.equal(LATEST_RESHAPE, 25);
  const picks: [number, number][] = [[1, 1], [4, 1], [5, 5], [12, 5], [13, 13], [14, 14], [18, 14], [19, 19],
    [20, 19], [21, 21], [22, 21], [23, 23], [24, 24], [25, 25], [28, 25]];
  for (const [opset, version] of picks) assert.equal(reshapeVersion(opset).version, version, `opset ${opset}`);
  throwsCode(() => reshapeVersion(0), "INVALID_OPSET", /Reshape does not exist at opset 0; its versions are 1, 5, 13/);
  throwsCode(() => reshapeVersion(13.5), "INVALID_OPSET");
  throwsCode(() => reshape(iota([2]), [2], { opset: 0 }), "INVALID_OPSET");
});

test("every version accepts exactly its own types and names itself when it refuses one", () => {
  for (const v of RESHAPE_VERSIONS) {
    for (const t of DTYPES) {
      const x = Tensor.zeros(t, [2, 3]);
      const run = (): Tensor => reshape(x, [3, 2], { opset: v.version });
      if (RESHAPE_TYPES[v.version].includes(t.name)) {
        const y = run();
        assert.deepEqual(y.shape, [3, 2]);
        assert.equal(y.dtype, x.dtype);
      } else {
        throwsCode(run, "UNSUPPORTED_TYPE", new RegExp(`^Reshape-${v.version} does not accept ${t.name}; it allows `));
      }
    }
  }
  // float6 exists in tensorcast (Cast-28) but in no Reshape version.
  throwsCode(() => reshape(Tensor.zeros("float6e2m3", [4]), [2, 2], { opset: 28 }), "UNSUPPORTED_TYPE", /Reshape-25/);
});

test("the official backend cases (onnx.md section 5) give the official shapes", () => {
  const cases: [target: number[], expected: number[]][] = [
    [[4, 2, 3], [4, 2, 3]], [[2, 4, 3], [2, 4, 3]], [[2, 12], [2, 12]], [[2, 3, 2, 2], [2, 3, 2, 2]], [[24], [24]],
    [[2, -1, 2], [2, 6, 2]], [[-1, 2, 3, 4], [1, 2, 3, 4]], [[2, 0, 4, 1], [2, 3, 4, 1]], [[2, 0, 1, -1], [2, 3, 1, 4]],
  ];
  const x = iota([2, 3, 4]);
  for (const [target, expected] of cases) {
    const y = reshape(x, target);
    assert.deepEqual(y.shape, expected, `[${target}]`);
    assert.deepEqual(y.toValues(), x.toValues());
  }
  assert.deepEqual(reshape(iota([0, 3, 4]), [3, 4, 0], { allowzero: true }).shape, [3, 4, 0]);
});

test("the observed cases of onnx.md section 5: the spec's answer in every row", () => {
  const ok: [input: number[], target: number[], allowzero: boolean, expected: number[]][] = [
    [[1], [], false, []], [[1, 1], [], false, []], [[], [1], false, [1]], [[], [-1], false, [1]],
    [[2, 3, 4], [0, -1], false, [2, 12]], [[2, 3, 4], [0, 0, -1], false, [2, 3, 4]],
    [[0, 3], [-1, 3], false, [0, 3]], [[0, 3], [3, -1], false, [3, 0]],
    [[0, 3, 4], [3, 4, 0], true, [3, 4, 0]], [[2, 0], [0, 5], true, [0, 5]],
    [[2, 0], [-1, 5], false, [0, 5]], [[2, 0], [5, -1], false, [5, 0]],
    // and a few more: a 0 under allowzero that the input also has; an empty input to a scalar's opposite
    [[2, 0, 3], [0, 2, 3], true, [0, 2, 3]], [[3, 0], [0, 0], false, [3, 0]], [[], [], false, []],
  ];
  for (const [input, target, allowzero, expected] of ok) {
    const y = reshape(iota(input), target, { allowzero });
    assert.deepEqual(y.shape, expected, `[${input}] to [${target}] allowzero=${allowzero}`);
  }
  const bad: [input: number[], target: number[], allowzero: boolean, code: string, rule: RegExp][] = [
    [[2], [], false, "SHAPE_MISMATCH", /the input has 2 elements but a scalar, which holds 1/],
    [[2, 3], [0, 6, 0], false, "SHAPE_MISMATCH", /dimension 2 is 0, which copies input dimension 2, but the input has rank 2/],
    [[2, 3], [-1, -1], false, "INVALID_SHAPE", /at most one dimension may be -1, got 2 \(at 0, 1\)/],
    [[2, 3], [-2, 3], false, "INVALID_SHAPE", /dimension 0 is -2; dimensions must be >= -1/],
    [[2, 3], [4, -1], false, "SHAPE_MISMATCH", /the -1 cannot be inferred: 6 elements are not a multiple of 4, the product of the other dimensions/],
    [[2, 3], [7], false, "SHAPE_MISMATCH", /the input has 6 elements but that shape holds 7/],
    [[0, 3], [0, -1], false, "SHAPE_MISMATCH", /the -1 cannot be inferred: the other dimensions multiply to 0 \(the 0s copy the input: \[0, -1\]\)/],
    // onnxruntime gives [0, 3] / [3, 0] here when the shape is not a constant; the spec says invalid.
    [[0, 3], [0, -1], true, "INVALID_SHAPE", /with allowzero a 0 is a real zero, so a -1 beside it cannot be inferred/],
    [[0, 3], [-1, 0], true, "INVALID_SHAPE", /with allowzero a 0 is a real zero/],
    [[2, 3], [0, -1], true, "INVALID_SHAPE", /with allowzero a 0 is a real zero/],
    [[0, 3, 4], [3, 4, 0], false, "SHAPE_MISMATCH", /the input has 0 elements but that shape holds 48 \(the 0s copy the input: \[3, 4, 4\]\)/],
    [[2, 3], [6.5], false, "INVALID_SHAPE", /dimension 0 is not a safe integer/],
    [[2, 3], [2 ** 53, 1], false, "INVALID_SHAPE", /dimension 0 is not a safe integer/],
    [[], [0], false, "SHAPE_MISMATCH", /dimension 0 is 0, which copies input dimension 0, but the input has rank 0/],
    [[2, 3], [2 ** 30, 2 ** 30, 2 ** 30], false, "SHAPE_MISMATCH", /the input has 6 elements but that shape holds more than 2\^53 - 1/],
  ];
  for (const [input, target, allowzero, code, rule] of bad) {
    // Every message names the type, the input shape, the requested shape and the version.
    const head = `cannot reshape float32 \\[${input.join(", ")}\\] to \\[${target.join(", ")}\\]` +
      `${allowzero ? " with allowzero" : ""} \\(Reshape-25\\): `;
    throwsCode(() => reshape(iota(input), target, { allowzero }), code, new RegExp(head + rule.source));
  }
});

test("shape as numbers, bigints or a 1-D int64 tensor; other shape containers are refused", () => {
  const x = iota([2, 3, 4]);
  const forms: ShapeLike[] = [[4, -1], [4n, -1n], Tensor.fromValues([4n, -1n], "int64"), [4, -1n]];
  for (const s of forms) assert.deepEqual(reshape(x, s).shape, [4, 6]);
  throwsCode(() => reshape(x, Tensor.fromValues([4, -1], "int32")), "UNSUPPORTED_TYPE",
    /shape input must be an int64 tensor, got int32 \[2\]/);
  throwsCode(() => reshape(x, Tensor.fromValues([4n, 6n], "int64", [1, 2])), "INVALID_SHAPE",
    /must be a 1-D int64 tensor, got one of shape \[1, 2\]/);
  throwsCode(() => reshape(x, Tensor.fromValues([24n], "int64", [])), "INVALID_SHAPE", /1-D/);
  throwsCode(() => reshape(x, [2n ** 63n - 1n]), "INVALID_SHAPE", /to \[9223372036854775807\].*not a safe integer/);
  throwsCode(() => reshape(x, [-3n, 8n]), "INVALID_SHAPE", /to \[-3, 8\].*dimension 0 is -3/);
  throwsCode(() => reshape(x, "24" as never), "INVALID_SHAPE", /an array of numbers or bigints or an int64 tensor, got string/);
  throwsCode(() => reshape(x, [Number.NaN]), "INVALID_SHAPE", /to \[NaN\].*not a safe integer/);
  throwsCode(() => reshape({} as never, [1]), "INVALID_DATA");
});

test("Reshape-1 takes the shape as a list only; allowzero exists from Reshape-14", () => {
  const x = iota([2, 3, 4]);
  assert.deepEqual(reshape(x, [4, 0, -1], { opset: 1 }).shape, [4, 3, 2]); // onnx.md: ORT's Reshape-1
  assert.deepEqual(reshape(iota([1, 1]), [], { opset: 1 }).shape, []);
  throwsCode(() => reshape(x, Tensor.fromValues([24n], "int64"), { opset: 4 }), "INVALID_ATTRIBUTE",
    /Reshape-1 takes shape as an attribute list/);
  assert.deepEqual(reshape(x, Tensor.fromValues([24n], "int64"), { opset: 5 }).shape, [24]);
  for (const opset of [1, 5, 13]) {
    throwsCode(() => reshape(x, [24], { opset, allowzero: false }), "INVALID_ATTRIBUTE",
      new RegExp(`Reshape-${opset} has no allowzero attribute \\(it exists from Reshape-14\\)`));
  }
  assert.deepEqual(reshape(x, [0, 12], { opset: 14, allowzero: false }).shape, [2, 12]);
  throwsCode(() => reshape(x, [0, 12], { opset: 14, allowzero: true }), "SHAPE_MISMATCH");
  throwsCode(() => reshape(x, [24], { allowZero: true } as never), "INVALID_ATTRIBUTE", /unknown option "allowZero"/);
  throwsCode(() => reshape(x, [24], { allowzero: 1 } as never), "INVALID_ATTRIBUTE", /allowzero must be true or false/);
  throwsCode(() => reshape(x, [24], null as never), "INVALID_ATTRIBUTE");
});

test("zero copy for every type: the result wraps the input's own storage", () => {
  for (const t of DTYPES.filter((d) => RESHAPE_TYPES[25].includes(d.name))) {
    const x = Tensor.zeros(t, [2, 3]);
    const y = reshape(x, [3, 1, 2]);
    assert.equal(y.data, x.data, `${t.name}: same storage object`);
    if (t.array !== "Array") {
      assert.equal((y.data as Uint8Array).buffer, (x.data as Uint8Array).buffer, `${t.name}: same ArrayBuffer`);
    }
    assert.deepEqual(x.shape, [2, 3], "the input keeps its shape");
  }
  // Mutating one is seen through the other, both ways.
  const x = iota([2, 3]);
  const y = reshape(x, [6]);
  x.data[4] = 40;
  assert.equal(y.toValues()[4], 40);
  y.data[0] = -1;
  assert.equal(x.toValues()[0], -1);
  // Strings share the string[]; packed sub-byte types share their bytes even when the count is odd.
  const s = Tensor.fromValues(["a", "b", "c", "d"], "string", [2, 2]);
  const s2 = reshape(s, [4]);
  (s.data as string[])[3] = "z";
  assert.deepEqual(s2.toValues(), ["a", "b", "c", "z"]);
  const u4 = Tensor.fromValues([1, 2, 3], "uint4", [3, 1]);
  const u4r = reshape(u4, [3]);
  u4.data[1] = 0xf0 | u4.data[1];
  assert.deepEqual(u4r.toValues(), [1, 2, 3], "the padding nibble is not an element");
  u4.data[0] = 0x54;
  assert.deepEqual(u4r.toValues(), [4, 5, 3]);
  const c = Tensor.fromValues([[1, 2], [3, 4]], "complex64", [2, 1]);
  assert.equal(reshape(c, [2]).data, c.data);
});

test("the official Reshape vectors, through the .onnx / .pb reader", () => {
  const folders = readdirSync(FIXTURES).filter((f) => f.startsWith("test_reshape_")).sort();
  assert.equal(folders.length, 10);
  for (const folder of folders) runOfficial(new URL(`${folder}/`, FIXTURES), folder, 25);
});

test("the onnx 1.12 Reshape vectors (opset 14), when libonnx-testdata is installed", (t) => {
  if (!existsSync(LIBONNX_1_12)) {
    t.skip("no /usr/share/libonnx-testdata");
    return;
  }
  const folders = readdirSync(LIBONNX_1_12).filter((f) => f.startsWith("test_reshape_")).sort();
  assert.equal(folders.length, 10);
  for (const folder of folders) runOfficial(new URL(`file://${LIBONNX_1_12}${folder}/`), folder, 14);
});

/** Runs a one-node Reshape model on each of its data sets and compares shape and bytes. */
function runOfficial(dir: URL, folder: string, expectedOpset: number): void {
  const model = decodeModel(readFileSync(new URL("model.onnx", dir)));
  const opset = opsetVersion(model, "");
  assert.equal(opset, expectedOpset, `${folder}: opset`);
  assert.equal(model.graph.nodes.length, 1);
  const node = model.graph.nodes[0];
  assert.equal(node.opType, "Reshape");
  let allowzero: boolean | undefined;
  for (const a of node.attributes) {
    if (a.name !== "allowzero" || a.type !== "INT" || (a.value !== 0n && a.value !== 1n)) {
      assert.fail(`${folder}: unexpected attribute ${a.name}`);
    }
    allowzero = a.value === 1n;
  }
  const sets = readdirSync(dir).filter((n) => n.startsWith("test_data_set_"));
  assert.ok(sets.length > 0);
  for (const set of sets) {
    const pb = (name: string): Tensor => decodeTensorProto(readFileSync(new URL(`${set}/${name}`, dir))).tensor;
    const [data, shape, expected] = [pb("input_0.pb"), pb("input_1.pb"), pb("output_0.pb")];
    const y: Tensor = reshape(data, shape, { opset, allowzero });
    assert.deepEqual(y.shape, expected.shape, `${folder}: shape`);
    assert.equal(y.dtype, expected.dtype);
    assert.deepEqual(y.bytes(), expected.bytes(), `${folder}: bytes`);
    assert.equal(y.data, data.data, `${folder}: zero copy`);
  }
}

/** A shape of up to 5 dims of 0..6, mostly non-empty. */
const shapes = fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 5 }).map((d) => (d.includes(0) && d.length % 2 ? d.map((v) => v || 1) : d));

/** A shape with the same element count: the dims shuffled, adjacent ones merged, 1s inserted, driven by `seed`. */
function compatible(dims: number[], seed: number[]): number[] {
  let k = 0;
  const next = (n: number): number => (n <= 0 ? 0 : seed[k++ % seed.length] % n);
  const out = dims.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = next(i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  for (let merges = next(3); merges > 0 && out.length > 1; merges--) {
    const i = next(out.length - 1);
    out.splice(i, 2, out[i] * out[i + 1]);
  }
  for (let ones = next(3); ones > 0; ones--) out.splice(next(out.length + 1), 0, 1);
  return out;
}

test("property: a random compatible reshape, and back, is the identity on shape and storage", () => {
  fc.assert(
    fc.property(shapes, fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), fc.boolean(), fc.boolean(), (dims, seed, minus, zeros) => {
      const x = iota(dims);
      const expected = compatible(dims, seed);
      const target: (number | bigint)[] = expected.slice();
      // An empty result needs allowzero for its real zeros. Otherwise, some entries equal to the
      // input's dimension at the same place may become 0 (a copy), and one other entry -1.
      const allowzero = expected.includes(0);
      if (!allowzero) {
        if (zeros) target.forEach((d, i) => (d === dims[i] && seed[i % 8] % 2 === 0 ? (target[i] = 0) : undefined));
        const at = expected.length ? seed[7] % expected.length : -1;
        if (minus && at >= 0 && target[at] !== 0) target[at] = -1n;
      }
      const y = reshape(x, target, { allowzero });
      assert.deepEqual(y.shape, expected, `[${dims}] to [${target}]`);
      assert.equal(y.data, x.data);
      const back = reshape(y, dims, { allowzero: true });
      assert.deepEqual(back.shape, dims);
      assert.equal(back.data, x.data);
      assert.deepEqual(back.toValues(), x.toValues());
    }),
    property(500, 20261122),
  );
});

test("property: a random request either works with the right element count or throws a TensorcastError", () => {
  fc.assert(
    fc.property(shapes, fc.array(fc.integer({ min: -2, max: 6 }), { maxLength: 5 }), fc.boolean(), (dims, target, allowzero) => {
      const x = iota(dims);
      let y: Tensor;
      try {
        y = reshape(x, target, { allowzero });
      } catch (e) {
        assert.ok(e instanceof Error && e.name === "TensorcastError", String(e));
        assert.match(e.message, new RegExp(`^cannot reshape float32 \\[${dims.join(", ")}\\] to \\[${target.join(", ")}\\]`));
        return;
      }
      assert.equal(y.size, x.size);
      assert.equal(y.shape.length, target.length);
      target.forEach((d, i) => {
        if (d > 0) assert.equal(y.shape[i], d);
        if (d === 0) assert.equal(y.shape[i], allowzero ? 0 : dims[i]);
      });
    }),
    property(1000, 20261123),
  );
});
