/**
 * Whole-model conversion of long graphs keeps one parse per node only while reading it (issue 24,
 * point 3: bounded memory at any length). Every pass used to keep every node parsed (about 600
 * bytes of objects a node, 1.7 GB resident for a 1,000,000-node chain); now a node is kept parsed
 * only when it holds bodies or is edited, and the others are written back as their bytes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { convertModelPrecision } from "../../../src/io/onnx/precision/model.js";
import { PbMessage } from "../../../src/io/onnx/precision/pb.js";
import { Bytes, chainModel, modelOf, nodeProto, valueInfo } from "../../support/big-graphs.js";

const url = (p: string): string => pathToFileURL(new URL(p, import.meta.url).pathname).href;

describe("long graphs: nodes are not all kept parsed", () => {
  // Kept parses of 200,001 nodes alone take about 120 MiB of heap: the conversion died under a
  // 160 MiB heap ("JavaScript heap out of memory") and now passes.
  it("a 200,001-node chain converts to float16 under a 160 MiB heap, every node written back", () => {
    const code = `
      const { convertModelPrecision } = await import(${JSON.stringify(url("../../../src/io/onnx/precision/model.js"))});
      const m = await import(${JSON.stringify(url("../../support/big-graphs.js"))});
      const input = m.chainModel(200_001);
      const r = convertModelPrecision(input, { to: "float16" });
      console.log(JSON.stringify({ in: input.length, out: r.bytes.length }));`;
    const p = spawnSync(process.execPath, ["--max-old-space-size=160", "--input-type=module", "-e", code], { encoding: "utf8", timeout: 300_000 });
    assert.equal(p.status, 0, String(p.stderr).slice(-500));
    const sizes = JSON.parse(String(p.stdout)) as { in: number; out: number };
    // float32 -> float16 changes each elem_type varint (1 -> 10): the same length.
    assert.equal(sizes.out, sizes.in);
  });

  it("nodes that are not edited are written back as the bytes they were read from", () => {
    const input = chainModel(1_000);
    const out = convertModelPrecision(input, { to: "float16" }).bytes;
    const nodeBytes = (bytes: Uint8Array): Uint8Array[] => PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!.all(1).map((f) => f.data);
    const [a, b] = [nodeBytes(input), nodeBytes(out)];
    assert.equal(b.length, 1_000);
    for (let k = 0; k < a.length; k++) assert.deepEqual(b[k], a[k], `node ${k}`);
  });

  it("a kept-io chain: the nodes next to the inserted Casts are renamed, the rest unchanged", () => {
    const out = convertModelPrecision(chainModel(1_000), { to: "float16", keepIoTypes: true }).bytes;
    const g = PbMessage.parse(out, "ModelProto").sub(7, "GraphProto")!;
    const nodes = g.subs(1, "NodeProto");
    assert.equal(nodes.length, 1_002);
    assert.deepEqual([nodes[0].string(4), nodes[0].strings(1)], ["Cast", ["x"]]);
    assert.deepEqual(nodes[1].strings(1), nodes[0].strings(2));
    assert.deepEqual(nodes[2].strings(1), ["v1"]);
    assert.deepEqual(nodes[1_000].strings(2), nodes[1_001].strings(1));
    assert.deepEqual([nodes[1_001].string(4), nodes[1_001].strings(2)], ["Cast", ["y"]]);
  });

  it("a node whose input and output are both kept-io outputs gets both renamed", () => {
    const g = new Bytes().len(1, nodeProto("Relu", ["x"], ["y1"])).len(1, nodeProto("Relu", ["y1"], ["y2"])).len(2, "two")
      .len(11, valueInfo("x")).len(12, valueInfo("y1")).len(12, valueInfo("y2"));
    const out = convertModelPrecision(modelOf(g), { to: "float16", keepIoTypes: true }).bytes;
    const nodes = PbMessage.parse(out, "ModelProto").sub(7, "GraphProto")!.subs(1, "NodeProto");
    const second = nodes.find((n) => n.string(4) === "Relu" && n.strings(1)[0] !== nodes[0].strings(2)[0])!;
    assert.deepEqual(second.strings(1), ["y1__float16"]);
    assert.deepEqual(second.strings(2), ["y2__float16"]);
    assert.deepEqual(nodes.filter((n) => n.string(4) === "Cast").map((n) => n.strings(2)[0]).sort(), ["x__float16", "y1", "y2"]);
  });
});
