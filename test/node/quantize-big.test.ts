// suite: full
/**
 * A 2 GiB float32 model to q4 under 400 MiB resident (issue 26 point 4): 32 MatMul weights
 * [4096, 4096] in a side file, quantized by quantizeModelFile in a child process whose peak
 * resident memory (process.resourceUsage().maxRSS) is the figure. Writes 2 GiB to the temporary
 * folder (skipped when the disk has no room); about 20 s here.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { diskSkip, GiB } from "./sparse-model.js";
import { scratch } from "./helpers.js";
import { writeChain } from "./quantize-model-streamed.js";

const url = (p: string): string => pathToFileURL(new URL(p, import.meta.url).pathname).href;

describe("a 2 GiB model to q4", () => {
  const dir = scratch();
  it("peaks below 400 MiB resident, the output inline", { skip: diskSkip(dir, 2.6 * GiB, "this test writes 2.3 GiB") }, (t) => {
    const model = writeChain(dir, "big", Array.from({ length: 32 }, () => [4096, 4096] as const), true);
    assert.equal(statSync(join(dir, "big.data")).size, 2 * GiB);
    const code = `
      const { quantizeModelFile } = await import(${JSON.stringify(url("../../src/node/quantize/model-file.js"))});
      const r = await quantizeModelFile(${JSON.stringify(model)}, ${JSON.stringify(join(dir, "big_q4.onnx"))}, { mode: "q4" });
      console.log(JSON.stringify({ quantized: r.quantized, outputBytes: r.outputBytes, externalData: r.externalData ?? null, seconds: r.seconds, peak: process.resourceUsage().maxRSS / 1024 }));`;
    const p = spawnSync(process.execPath, ["--input-type=module", "-e", code], { encoding: "utf8", timeout: 600_000 });
    assert.equal(p.status, 0, String(p.stderr).slice(-800));
    const r = JSON.parse(String(p.stdout)) as { quantized: number; outputBytes: number; externalData: string | null; seconds: number; peak: number };
    t.diagnostic(`peak resident ${r.peak.toFixed(0)} MiB, ${r.seconds.toFixed(1)} s, output ${(r.outputBytes / 2 ** 20).toFixed(0)} MiB`);
    assert.equal(r.quantized, 32);
    // Per weight: 8 MiB of codes and 2 MiB of scales (block 32), all inline.
    assert.equal(r.externalData, null);
    assert.ok(r.outputBytes > 32 * 10 * 2 ** 20 && r.outputBytes < 32 * 10 * 2 ** 20 + 65536, String(r.outputBytes));
    assert.ok(r.peak < 400, `peak resident ${r.peak.toFixed(0)} MiB`);
  });
});
