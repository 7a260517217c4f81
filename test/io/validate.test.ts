/**
 * The ModelProto / TensorProto validator (src/io/onnx/validate.ts) and the readers that run it
 * (decodeModel, decodeTensorProto, WireReader): protobuf's nesting limit, exactly, and no
 * RangeError however deep; every message of onnx.proto walked, a wrong wire type or non-UTF-8
 * string refused wherever it is; each tensor's data checked against its dims, wherever the tensor
 * is; and the same verdict whichever pieces the bytes come in. Where protobuf and onnx (Debian's
 * python3-onnx 1.12) are on the machine, they are asked about the same bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { TensorcastError } from "../../src/index.js";
import { decodeModel } from "../../src/io/onnx/model.js";
import { decodeTensorProto } from "../../src/io/onnx/tensorproto.js";
import { MessageValidator, validateMessage, type OnnxRoot } from "../../src/io/onnx/validate.js";
import { WireReader, decodeUtf8 } from "../../src/io/onnx/wire.js";
import { throwsCode } from "../support/assertions.js";
import { askPeer, peerMissing } from "../support/onnx-peer.js";
import { groups, nestedIfs, tensorProto, W } from "../support/protobuf.js";
import { property } from "../support/suite.js";

const peerSkip = peerMissing();

const validTensor = (): W => tensorProto(1, [2], "w").len(4, new Uint8Array(new Float32Array([1, 2]).buffer));
const opset = new W().len(1, "").int(2, 21);

/** A model whose graph holds `graph` (a GraphProto body). */
function model(graph: W | Uint8Array): Uint8Array {
  return new W().int(1, 8).len(8, opset).len(7, graph).bytes();
}

/** Runs `fn` and returns the TensorcastError it throws (failing on anything else). */
function refusal(fn: () => unknown): TensorcastError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof TensorcastError, `expected a TensorcastError, got ${e instanceof Error ? e.stack : String(e)}`);
    return e;
  }
  assert.fail("expected a refusal");
}

// ---- nesting -------------------------------------------------------------------------------------

test("20,000 nested start-groups are INVALID_DATA at protobuf's depth limit, not a RangeError", () => {
  const deep = /nested 101 levels deep at byte \d+; protobuf's limit \(its default recursion limit\) is 100/;
  const tensor = validTensor().append(groups(20_000).out).bytes();
  throwsCode(() => decodeTensorProto(tensor), "INVALID_DATA", deep);
  const inModel = new W().int(1, 8).append(groups(20_000).out).len(7, new W().len(2, "g")).bytes();
  throwsCode(() => decodeModel(inModel), "INVALID_DATA", deep);
  // Inside a node of the graph: two levels of messages plus 99 groups is the 101st level.
  const inNode = model(new W().len(1, new W().len(4, "Cast").append(groups(20_000).out)));
  throwsCode(() => decodeModel(inNode), "INVALID_DATA", /^ModelProto\.graph\.node\.\.\.\.96 more\.\.\.\.\[group 100\]\.\[group 100\]\.\[group 100\] \(group 100 at byte \d+\): messages and groups nested 101 levels deep/);
  // The reader's own skip() has the same limit.
  const r = new WireReader(groups(20_000).bytes(), "Raw");
  r.next();
  throwsCode(() => r.skip(), "INVALID_DATA", /Raw: messages and groups nested 101 levels deep/);
});

test("protobuf's limit exactly: 100 nested groups or messages are read, 101 are refused", (t) => {
  const tensorWith = (n: number): Uint8Array => validTensor().append(groups(n).out).bytes();
  assert.equal(decodeTensorProto(tensorWith(100)).tensor.size, 2);
  throwsCode(() => decodeTensorProto(tensorWith(101)), "INVALID_DATA", /nested 101 levels deep/);
  // Model (0) > graph (1) > node (2) > attribute (3) > tp TypeProto (4), then Sequence and
  // TypeProto in turn: k pairs reach depth 4 + 2k, and the innermost empty Sequence 5 + 2k.
  const typeChain = (k: number): Uint8Array => {
    let type = new W().len(4, new W());
    for (let i = 0; i < k; i++) type = new W().len(4, new W().len(1, type));
    return model(new W().len(1, new W().len(4, "Identity").len(5, new W().len(1, "tp").int(20, 13).len(14, type))));
  };
  assert.equal(decodeModel(typeChain(47)).graph.nodes[0].opType, "Identity");
  throwsCode(() => decodeModel(typeChain(48)), "INVALID_DATA", /nested 101 levels deep/);
  // Ifs: 1 + 3 * 33 = 100 levels is read, 34 Ifs are not.
  assert.equal(decodeModel(model(nestedIfs(33))).graph.nodes[0].opType, "If");
  throwsCode(() => decodeModel(model(nestedIfs(34))), "INVALID_DATA", /nested 101 levels deep/);
  if (peerSkip) return t.skip(peerSkip);
  const verdicts = askPeer([
    ["tensor", tensorWith(100)], ["tensor", tensorWith(101)], ["model", typeChain(47)], ["model", typeChain(48)],
    ["model", model(nestedIfs(33))], ["model", model(nestedIfs(34))],
  ]).map((v) => v.parse === "ok");
  assert.deepEqual(verdicts, [true, false, true, false, true, false]);
});

test("subgraphs nested 2,000 (and 7,000) deep through If attributes are refused, as protobuf refuses them", (t) => {
  const deep = model(nestedIfs(2000));
  const e = refusal(() => decodeModel(deep));
  assert.equal(e.code, "INVALID_DATA");
  assert.match(e.message, /^ModelProto\.graph\.node\.\.\.\.96 more\.\.\.\.attribute\.g\.node \(NodeProto at byte \d+\): messages and groups nested 101 levels deep/);
  throwsCode(() => validateMessage("ModelProto", deep), "INVALID_DATA", /nested 101 levels deep/);
  // 7,000 Ifs: 21,000 levels of messages.
  throwsCode(() => decodeModel(model(nestedIfs(7000))), "INVALID_DATA", /nested 101 levels deep/);
  if (peerSkip) return t.skip(peerSkip);
  const [v] = askPeer([["model", deep]]);
  assert.match(v.parse, /DecodeError/);
});

// ---- corrupt bytes anywhere ----------------------------------------------------------------------

/** A model whose main graph's If runs a subgraph with a Cast node named "inner". */
function modelWithSubgraph(): Uint8Array {
  const sub = new W()
    .len(1, new W().len(1, "x").len(2, "y").len(3, "inner").len(4, "Identity"))
    .len(2, "then")
    .len(12, new W().len(1, "y").len(2, new W().len(1, new W().int(1, 1))));
  const attribute = new W().len(1, "then_branch").int(20, 5).len(6, sub);
  const node = new W().len(1, "c").len(2, "y").len(3, "outer").len(4, "If").len(5, attribute);
  return model(new W().len(1, node).len(2, "main").len(11, new W().len(1, "c").len(2, new W().len(1, new W().int(1, 9)))));
}

/** `bytes` with the first occurrence of `find` replaced by `by` (same length). */
function replaced(bytes: Uint8Array, find: number[], by: number[]): Uint8Array {
  const at = Buffer.from(bytes).indexOf(Buffer.from(find));
  assert.ok(at >= 0, `${Buffer.from(find).toString("hex")} not found`);
  const out = bytes.slice();
  out.set(by, at);
  return out;
}

test("a flipped byte inside a subgraph's NodeProto (a wrong wire type) is refused, as protobuf refuses it", (t) => {
  const good = modelWithSubgraph();
  assert.equal(decodeModel(good).graph.nodes[0].name, "outer");
  // The tag of the inner node's name (field 3, length-delimited: 0x1a) flipped to fixed32 (0x1d).
  const nameTag = [0x1a, 5, ...Buffer.from("inner")];
  const flipped = replaced(good, nameTag, [0x1d]);
  throwsCode(
    () => decodeModel(flipped), "INVALID_DATA",
    /^ModelProto\.graph\.node\.attribute\.g\.node \(NodeProto at byte \d+\): field 3 \(name\) at byte \d+ has wire type fixed32, expected length-delimited$/,
  );
  if (peerSkip) return t.skip(peerSkip);
  const [ok, bad] = askPeer([["model", good], ["model", flipped]]);
  assert.equal(ok.parse, "ok");
  assert.match(bad.parse, /DecodeError/);
});

test("a string that is not UTF-8 is refused in any message (protobuf's proto2 parser passes it on as bytes)", () => {
  // "inner" -> "\xffnner": onnx 1.12 loads and checks this model, handing the name to Python as
  // bytes; ONNX defines strings as UTF-8 and tensorcast keeps to that.
  const bad = replaced(modelWithSubgraph(), [...Buffer.from("inner")], [0xff]);
  throwsCode(() => decodeModel(bad), "INVALID_DATA", /NodeProto at byte \d+\): field 3 \(name\) is not valid UTF-8 \(at byte \d+\)/);
  // A doc_string the decoder never reads, and a dim_param deep in a value_info type.
  const doc = model(new W().len(1, new W().len(4, "Identity").len(6, [0x61, 0xc0, 0x80])));
  throwsCode(() => decodeModel(doc), "INVALID_DATA", /field 6 \(doc_string\) is not valid UTF-8/);
  const dim = new W().len(2, [0xed, 0xa0, 0x80]);
  const valueInfo = new W().len(1, "v").len(2, new W().len(1, new W().int(1, 1).len(2, new W().len(1, dim))));
  throwsCode(() => decodeModel(model(new W().len(13, valueInfo))), "INVALID_DATA", /TensorShapeProto\.Dimension at byte \d+\): field 2 \(dim_param\) is not valid UTF-8/);
  // string_data is bytes in onnx.proto, but every reader of a STRING tensor decodes it as UTF-8:
  // the check refuses it wherever the tensor is, so a file and its decoding never disagree.
  const strings = new W().int(1, 2).int(2, 8).len(6, "ok").len(6, [0xff]);
  assert.throws(() => validateMessage("TensorProto", strings.bytes()), /TensorProto: string_data\[1\] is not valid UTF-8 \(at byte 10\)/);
  throwsCode(() => decodeModel(model(new W().len(5, strings.len(8, "s")))), "INVALID_DATA", /initializer \(TensorProto at byte \d+\): string_data\[1\] is not valid UTF-8/);
});

test("UTF-8 is checked as the strict WHATWG decoder checks it, whatever the pieces", () => {
  const byte = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x80, 0xbf, 0xc0, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0x9f, 0xa0, 0x8f, 0x90));
  fc.assert(
    fc.property(fc.array(byte, { maxLength: 12 }), fc.nat(), (chars, cut) => {
      const pb = tensorProto(1, [0], "").len(8, chars).bytes();
      let expected: string | undefined;
      try {
        decodeUtf8(new Uint8Array(chars), "x");
      } catch {
        expected = "INVALID_DATA";
      }
      for (const pieces of [[pb], [pb.subarray(0, cut % (pb.length + 1)), pb.subarray(cut % (pb.length + 1))]]) {
        let got: string | undefined;
        try {
          const v = new MessageValidator("TensorProto", pb.length);
          for (const p of pieces) v.push(p);
          v.finish();
        } catch (e) {
          got = (e as TensorcastError).code;
        }
        assert.equal(got, expected, Buffer.from(chars).toString("hex"));
      }
    }),
    property(3000, 13),
  );
});

// ---- tensors anywhere ----------------------------------------------------------------------------

test("float_data disagreeing with dims is SHAPE_MISMATCH wherever the tensor is", (t) => {
  const short = tensorProto(1, [3], "w").float(4, 1).float(4, 2);
  const message = /tensor "w": float_data holds 2 entries; shape \[3\] of FLOAT needs 3 elements/;
  throwsCode(() => decodeTensorProto(short.bytes()), "SHAPE_MISMATCH", message);
  const places: [string, Uint8Array][] = [
    ["initializer", model(new W().len(5, short))],
    ["subgraph initializer", model(nestedIfs(2, new W().len(5, short)))],
    ["TENSORS attribute", model(new W().len(1, new W().len(4, "X").len(5, new W().len(1, "ts").int(20, 9).len(10, short))))],
    ["sparse initializer values", model(new W().len(15, new W().len(1, short).len(2, tensorProto(7, [3]).packed(7, [0, 1, 2])).int(3, 9)))],
    ["function's attribute default", new W().int(1, 8).len(25, new W().len(1, "f").len(11, new W().len(1, "a").int(20, 4).len(5, short))).bytes()],
  ];
  for (const [where, bytes] of places) {
    const e = refusal(() => decodeModel(bytes));
    assert.equal(e.code, "SHAPE_MISMATCH", `${where}: ${e.message}`);
    assert.match(e.message, message, where);
  }
  // raw_data, and the count for complex (pairs) and packed sub-byte types.
  throwsCode(() => decodeTensorProto(tensorProto(2, [5]).len(9, [1, 2, 3, 4]).bytes()), "SHAPE_MISMATCH", /raw_data has 4 bytes; shape \[5\] of UINT8 needs 5/);
  throwsCode(() => decodeTensorProto(tensorProto(14, [1]).float(4, 1).bytes()), "SHAPE_MISMATCH", /float_data holds 1 entries; shape \[1\] of COMPLEX64 needs 2 numbers/);
  throwsCode(() => decodeTensorProto(tensorProto(22, [3]).packed(5, [0x21, 0x03, 0]).bytes()), "SHAPE_MISMATCH", /int32_data holds 3 entries; shape \[3\] of INT4 needs 2 packed bytes/);
  if (peerSkip) return t.skip(peerSkip);
  const good = tensorProto(1, [3], "w").float(4, 1).float(4, 2).float(4, 3);
  const verdicts = askPeer([["tensor", good.bytes()], ["tensor", short.bytes()], ["model", model(new W().len(5, short))]]);
  assert.deepEqual(verdicts.map((v) => v.check === "ok"), [true, false, false]);
  assert.match(verdicts[1].check, /cannot reshape array of size 2 into shape \(3,?\)/);
});

// ---- every message ---------------------------------------------------------------------------------

type Leaf = { s: string } | { b: number[] } | { v: number | bigint } | { f: number } | { d: number };
interface Msg {
  readonly type: string;
  readonly fields: readonly (readonly [number, string, Leaf | Msg])[];
}
const isMsg = (x: Leaf | Msg): x is Msg => "fields" in x;
const msg = (type: string, ...fields: (readonly [number, string, Leaf | Msg])[]): Msg => ({ type, fields });

const str = (s: string): Leaf => ({ s });
const int = (v: number | bigint): Leaf => ({ v });
const tensorMsg = (name: string, dataType: number, dims: number[], data: (readonly [number, string, Leaf | Msg])[]): Msg =>
  msg("TensorProto", ...dims.map((d) => [1, "dims", int(d)] as const), [2, "data_type", int(dataType)], [8, "name", str(name)], ...data);
const floatTensor = (name: string): Msg =>
  tensorMsg(name, 1, [2], [[4, "float_data", { f: 1 }], [4, "float_data", { f: 2 }], [12, "doc_string", str("d")]]);
const entry = (): Msg => msg("StringStringEntryProto", [1, "key", str("k")], [2, "value", str("v")]);
const shape = (): Msg => msg("TensorShapeProto",
  [1, "dim", msg("TensorShapeProto.Dimension", [1, "dim_value", int(2)])],
  [1, "dim", msg("TensorShapeProto.Dimension", [2, "dim_param", str("N")], [3, "denotation", str("DATA_BATCH")])]);
const tensorType = (): Msg => msg("TypeProto", [1, "tensor_type", msg("TypeProto.Tensor", [1, "elem_type", int(1)], [2, "shape", shape()])], [6, "denotation", str("TENSOR")]);
const valueInfo = (name: string, type: Msg): Msg =>
  msg("ValueInfoProto", [1, "name", str(name)], [2, "type", type], [3, "doc_string", str("d")], [4, "metadata_props", entry()]);
const sparse = (): Msg => msg("SparseTensorProto",
  [1, "values", floatTensor("sv")], [2, "indices", tensorMsg("si", 7, [2], [[7, "int64_data", int(0)], [7, "int64_data", int(3)]])], [3, "dims", int(4)]);
const small = (): Msg => msg("GraphProto", [2, "name", str("small")]);
const opsetMsg = (): Msg => msg("OperatorSetIdProto", [1, "domain", str("")], [2, "version", int(21)]);
const attr = (name: string, type: number, ...fields: (readonly [number, string, Leaf | Msg])[]): Msg =>
  msg("AttributeProto", [1, "name", str(name)], [20, "type", int(type)], ...fields);
const node = (): Msg => msg("NodeProto",
  [1, "input", str("x")], [2, "output", str("y")], [3, "name", str("n")], [4, "op_type", str("Cast")], [7, "domain", str("")],
  [8, "overload", str("")], [6, "doc_string", str("d")], [9, "metadata_props", entry()],
  [5, "attribute", attr("to", 2, [3, "i", int(1)], [13, "doc_string", str("d")], [21, "ref_attr_name", str("r")])],
  [5, "attribute", attr("f", 1, [2, "f", { f: 0.5 }])],
  [5, "attribute", attr("s", 3, [4, "s", { b: [0x61] }])],
  [5, "attribute", attr("t", 4, [5, "t", floatTensor("at")])],
  [5, "attribute", attr("g", 5, [6, "g", small()])],
  [5, "attribute", attr("floats", 6, [7, "floats", { f: 1.5 }])],
  [5, "attribute", attr("ints", 7, [8, "ints", int(-3)])],
  [5, "attribute", attr("strings", 8, [9, "strings", { b: [0x62] }])],
  [5, "attribute", attr("tensors", 9, [10, "tensors", floatTensor("ats")])],
  [5, "attribute", attr("graphs", 10, [11, "graphs", small()])],
  [5, "attribute", attr("sparse", 11, [22, "sparse_tensor", sparse()])],
  [5, "attribute", attr("sparses", 12, [23, "sparse_tensors", sparse()])],
  [5, "attribute", attr("tp", 13, [14, "tp", tensorType()])],
  [5, "attribute", attr("tps", 14, [15, "type_protos", tensorType()])],
  [10, "device_configurations", msg("NodeDeviceConfigurationProto",
    [1, "configuration_id", str("cfg")], [3, "pipeline_stage", int(0)],
    [2, "sharding_spec", msg("ShardingSpecProto",
      [1, "tensor_name", str("x")], [2, "device", int(0)],
      [3, "index_to_device_group_map", msg("IntIntListEntryProto", [1, "key", int(0)], [2, "value", int(1)])],
      [4, "sharded_dim", msg("ShardedDimProto", [1, "axis", int(0)],
        [2, "simple_sharding", msg("SimpleShardedDimProto", [1, "dim_value", int(2)], [3, "num_shards", int(2)])],
        [2, "simple_sharding", msg("SimpleShardedDimProto", [2, "dim_param", str("N")])])])])]);
const graph = (): Msg => msg("GraphProto",
  [1, "node", node()], [2, "name", str("g")], [10, "doc_string", str("d")],
  [5, "initializer", floatTensor("w")],
  [5, "initializer", tensorMsg("r", 2, [3], [[9, "raw_data", { b: [1, 2, 3] }]])],
  [5, "initializer", tensorMsg("ext", 1, [1000], [[13, "external_data", entry()], [14, "data_location", int(1)]])],
  [5, "initializer", tensorMsg("seg", 1, [1000], [[3, "segment", msg("TensorProto.Segment", [1, "begin", int(0)], [2, "end", int(1)])], [4, "float_data", { f: 1 }]])],
  [5, "initializer", tensorMsg("s", 8, [2], [[6, "string_data", { b: [0xc3, 0xa9] }], [6, "string_data", { b: [] }], [16, "metadata_props", entry()]])],
  [5, "initializer", tensorMsg("d", 11, [1], [[10, "double_data", { d: 0.25 }]])],
  [5, "initializer", tensorMsg("u", 13, [1], [[11, "uint64_data", int(2n ** 64n - 1n)]])],
  [15, "sparse_initializer", sparse()],
  [11, "input", valueInfo("x", tensorType())],
  [12, "output", valueInfo("y", msg("TypeProto", [4, "sequence_type", msg("TypeProto.Sequence", [1, "elem_type", tensorType()])]))],
  [13, "value_info", valueInfo("m", msg("TypeProto", [5, "map_type", msg("TypeProto.Map", [1, "key_type", int(7)], [2, "value_type", tensorType()])]))],
  [13, "value_info", valueInfo("o", msg("TypeProto", [9, "optional_type", msg("TypeProto.Optional", [1, "elem_type", tensorType()])]))],
  [13, "value_info", valueInfo("sp", msg("TypeProto", [8, "sparse_tensor_type", msg("TypeProto.SparseTensor", [1, "elem_type", int(1)], [2, "shape", shape()])]))],
  [13, "value_info", valueInfo("op", msg("TypeProto", [7, "opaque_type", msg("TypeProto.Opaque", [1, "domain", str("d")], [2, "name", str("n")])]))],
  [14, "quantization_annotation", msg("TensorAnnotation", [1, "tensor_name", str("w")], [2, "quant_parameter_tensor_names", entry()])],
  [16, "metadata_props", entry()]);
/** A ModelProto using every message and field of onnx.proto (IR version 13). */
const everything = (): Msg => msg("ModelProto",
  [1, "ir_version", int(10)], [2, "producer_name", str("p")], [3, "producer_version", str("1")], [4, "domain", str("d")],
  [5, "model_version", int(1)], [6, "doc_string", str("d")], [8, "opset_import", opsetMsg()], [14, "metadata_props", entry()],
  [7, "graph", graph()],
  [20, "training_info", msg("TrainingInfoProto", [1, "initialization", small()], [2, "algorithm", small()],
    [3, "initialization_binding", entry()], [4, "update_binding", entry()])],
  [25, "functions", msg("FunctionProto", [1, "name", str("f")], [4, "input", str("a")], [5, "output", str("b")],
    [6, "attribute", str("alpha")], [11, "attribute_proto", attr("beta", 1, [2, "f", { f: 1 }])], [7, "node", node()],
    [8, "doc_string", str("d")], [9, "opset_import", opsetMsg()], [10, "domain", str("custom")], [13, "overload", str("o")],
    [12, "value_info", valueInfo("a", tensorType())], [14, "metadata_props", entry()])],
  [26, "configuration", msg("DeviceConfigurationProto", [1, "name", str("c")], [2, "num_devices", int(2)], [3, "device", str("cpu0")])]);

interface Site {
  readonly parent: string;
  readonly field: number;
  readonly name: string;
  readonly kind: "string" | "varint" | "float" | "message";
}

/**
 * Serializes `m`. When `fault` is the index of a field (in depth-first order), that field is
 * spoiled: a string gets a byte that is never UTF-8, a varint is written as fixed32, a float or a
 * message as a varint. `sites` collects every field that can be spoiled.
 */
function serialize(m: Msg, fault = -1, sites: Site[] = [], counter = { n: 0 }): W {
  const w = new W();
  for (const [field, name, value] of m.fields) {
    const index = counter.n;
    const spoil = index === fault;
    if (isMsg(value)) {
      sites.push({ parent: m.type, field, name, kind: "message" });
      counter.n++;
      const body = serialize(value, fault, sites, counter);
      if (spoil) w.int(field, 1);
      else w.len(field, body);
    } else if ("s" in value) {
      sites.push({ parent: m.type, field, name, kind: "string" });
      counter.n++;
      w.len(field, spoil ? [...Buffer.from(value.s), 0xff] : value.s);
    } else if ("v" in value) {
      sites.push({ parent: m.type, field, name, kind: "varint" });
      counter.n++;
      if (spoil) w.tag(field, 5).push(0, 0, 0, 0);
      else w.int(field, value.v);
    } else if ("f" in value || "d" in value) {
      sites.push({ parent: m.type, field, name, kind: "float" });
      counter.n++;
      if (spoil) w.int(field, 1);
      else if ("f" in value) w.float(field, value.f);
      else w.double(field, value.d);
    } else {
      w.len(field, value.b);
    }
  }
  return w;
}

test("a model using every message of onnx.proto is accepted, as protobuf accepts it", (t) => {
  const bytes = serialize(everything()).bytes();
  validateMessage("ModelProto", bytes);
  // The validator leaves external and segmented tensors' data alone; decoding them is another matter.
  throwsCode(() => decodeModel(bytes), "NOT_IMPLEMENTED", /tensor "ext": external data is not supported yet/);
  if (peerSkip) return t.skip(peerSkip);
  assert.equal(askPeer([["model", bytes]])[0].parse, "ok");
});

test("every field of every message is checked: a spoiled one is refused, naming the message and the field", () => {
  const sites: Site[] = [];
  serialize(everything(), -1, sites);
  const types = new Set(sites.map((s) => s.parent));
  // Every message type of onnx.proto has fields in the model (the root included).
  assert.equal(types.size, 28, [...types].join(" "));
  for (let i = 0; i < sites.length; i++) {
    const site = sites[i];
    const bytes = serialize(everything(), i).bytes();
    const e = refusal(() => validateMessage("ModelProto", bytes));
    const where = site.parent === "ModelProto" ? /^ModelProto: / : new RegExp(`\\(${site.parent.replace(".", "\\.")} at byte \\d+\\): `);
    const what = site.kind === "string"
      ? `field ${site.field} \\(${site.name}\\) is not valid UTF-8`
      : `field ${site.field} \\(${site.name}\\) at byte \\d+ has wire type`;
    assert.match(e.message, where, `${site.parent}.${site.name}: ${e.message}`);
    assert.match(e.message, new RegExp(what), `${site.parent}.${site.name}: ${e.message}`);
    assert.equal(e.code, "INVALID_DATA");
  }
});

test("unknown fields of every wire type are skipped; repeated scalars packed or not; a bad varint is refused", (t) => {
  const unknown = new W().int(99, 7).float(98, 1).double(97, 2).len(96, [0xff, 0xfe]).append(groups(3, 95).out);
  const tensor = tensorProto(7, [3], "i").packed(7, [1, -1]).int(7, 5).append(unknown.out).bytes();
  assert.deepEqual(decodeTensorProto(tensor).tensor.toValues(), [1n, -1n, 5n]);
  const m = model(new W().len(2, "g").append(unknown.out).len(1, new W().len(4, "X").len(5, new W().len(1, "a").int(20, 7).packed(8, [1, 2]).int(8, 3))));
  assert.deepEqual(decodeModel(m).graph.nodes[0].attributes, [{ name: "a", type: "INTS", value: [1n, 2n, 3n] }]);
  // A packed float run whose length is no multiple of 4; an 11-byte varint in an unknown field.
  throwsCode(() => validateMessage("TensorProto", tensorProto(1, [1]).len(4, [0, 0, 0]).bytes()), "INVALID_DATA", /packed field 4 \(float_data\) holds 3 bytes, not a multiple of 4/);
  const eleven = tensorProto(1, [0]).tag(99, 0).push(...Array(10).fill(0x80), 1).bytes();
  throwsCode(() => validateMessage("TensorProto", eleven), "INVALID_DATA", /TensorProto: field 99: varint at byte 6 is longer than 10 bytes/);
  if (peerSkip) return t.skip(peerSkip);
  assert.deepEqual(askPeer([["tensor", tensor], ["model", m], ["tensor", eleven]]).map((v) => v.parse === "ok"), [true, true, false]);
});

// ---- pieces ----------------------------------------------------------------------------------------

/** The validator's verdict ("ok" or code + message) on `bytes` pushed in pieces cut at `cuts`, skipping what it allows. */
function verdict(root: OnnxRoot, bytes: Uint8Array, cuts: number[] = []): string {
  const v = new MessageValidator(root, bytes.length);
  try {
    const ends = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    ends.push(bytes.length);
    for (const end of ends) {
      while (v.position < end) {
        const skip = Math.min(v.skippable, end - v.position);
        if (skip > 0) v.skip(skip);
        else v.push(bytes.subarray(v.position, end));
      }
    }
    v.finish();
    return "ok";
  } catch (e) {
    if (!(e instanceof TensorcastError)) throw e;
    return `${e.code} ${e.message}`;
  }
}

test("pieces of any size, and skipping what may be skipped, give the verdict of the whole", () => {
  const base = serialize(everything()).bytes();
  const samples: [OnnxRoot, Uint8Array][] = [
    ["ModelProto", base],
    ["ModelProto", serialize(everything(), 40).bytes()],
    ["ModelProto", model(nestedIfs(34))],
    ["TensorProto", tensorProto(7, [3], "i").packed(7, [1, -1, 2n ** 62n]).bytes()],
    ["TensorProto", validTensor().append(groups(101).out).bytes()],
  ];
  assert.equal(verdict("ModelProto", base), "ok");
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: samples.length - 1 }),
      fc.array(fc.nat(), { maxLength: 40 }),
      fc.option(fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }), { nil: undefined }),
      (k, cuts, flip) => {
        const [root, clean] = samples[k];
        const bytes = clean.slice();
        if (flip) bytes[flip.at % bytes.length] = flip.byte;
        assert.equal(verdict(root, bytes, cuts), verdict(root, bytes));
        // One byte at a time, too (every token straddles a cut).
        if (cuts.length === 0) assert.equal(verdict(root, bytes, [...Array(bytes.length).keys()]), verdict(root, bytes));
      },
    ),
    property(600, 6),
  );
});
