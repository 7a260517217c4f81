/**
 * string_data of a STRING tensor must be UTF-8 (docs/convert.md): onnx.proto declares the entries
 * bytes and onnx 1.12's load and checker pass other bytes on, but its value reader
 * (numpy_helper.to_array) raises UnicodeDecodeError and a JavaScript string cannot hold them, so
 * tensorcast refuses them when the file is read: the library's decoders, inspect, convert and diff.
 * A valid multi-byte entry beside them reads back as it was.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeModel, decodeTensorProto } from "../../src/index.js";
import { throwsCode } from "../support/assertions.js";
import { W } from "../support/protobuf.js";
import { cli, scratch } from "./helpers.js";

const dir = scratch();

/** A STRING TensorProto [2] named s holding "ok" and `second`. */
function strings(second: number[]): W {
  return new W().int(1, 2).int(2, 8).len(6, "ok").len(6, second).len(8, "s");
}

function model(tensor: W): Uint8Array {
  const output = new W().len(1, "s").len(2, new W().len(1, new W().int(1, 8)));
  const g = new W().len(2, "g").len(5, tensor).len(12, output);
  return new W().int(1, 8).len(8, new W().len(1, "").int(2, 17)).len(7, g).bytes();
}

const BAD = [0xff, 0xfe, 0x20, 0x62];
const GOOD = [0xc3, 0xa9, 0xf0, 0x9f, 0x99, 0x82]; // "é🙂"

test("valid UTF-8 in string_data reads back; other bytes are INVALID_DATA naming the entry and the byte", () => {
  assert.deepEqual(decodeTensorProto(strings(GOOD).bytes()).tensor.data, ["ok", "é🙂"]);
  assert.deepEqual(decodeModel(model(strings(GOOD))).graph.initializers[0].tensor.data, ["ok", "é🙂"]);
  throwsCode(() => decodeTensorProto(strings(BAD).bytes()), "INVALID_DATA", /string_data\[1\] is not valid UTF-8 \(at byte \d+\)/);
  throwsCode(() => decodeModel(model(strings(BAD))), "INVALID_DATA", /TensorProto at byte \d+\): string_data\[1\] is not valid UTF-8/);
});

test("inspect, convert and diff refuse a model or .pb whose string_data is not UTF-8 (exit 1), and read the valid one", async () => {
  const files: Record<string, Uint8Array> = {
    "bad.onnx": model(strings(BAD)), "bad.pb": strings(BAD).bytes(), "good.onnx": model(strings(GOOD)), "good.pb": strings(GOOD).bytes(),
  };
  for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
  for (const name of ["bad.onnx", "bad.pb"]) {
    const p = join(dir, name);
    for (const argv of [["inspect", p], ["convert", p, "--to", "float16", "-o", join(dir, `out-${name}`)], ["diff", p, p]]) {
      const r = await cli(argv);
      assert.equal(r.code, 1, `${argv.join(" ")}: ${r.err}`);
      assert.match(r.err, /string_data\[1\] is not valid UTF-8 .*\(code INVALID_DATA\)/, argv.join(" "));
    }
  }
  for (const name of ["good.onnx", "good.pb"]) {
    const r = await cli(["inspect", join(dir, name)]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /string/);
  }
});
