/**
 * The official ONNX backend node tests (libonnx-testdata, onnx 1.12) whose inputs are all float32:
 * each model is converted to float16 with --keep-io-types, and the float32 original and the
 * converted model are run in onnxruntime-node (child process) on the test's inputs. Reported: how
 * many convert, how many originals run, how many converted run, and how many match the expected
 * outputs within 1e-2 of max(1, |expected|) (float16 has 11 significant bits; a few operators are
 * far less accurate, and are listed).
 *
 * Asserted: every model converts or is refused with a TensorcastError, and every converted model
 * whose original runs also runs (a failure to load is a defect of the pass, which must leave the
 * model valid), apart from graphs of opset 1..5 where onnxruntime's own float16 fallback inserts
 * Cast nodes of a later opset (an onnxruntime defect: the converted graph is valid).
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { TensorcastError } from "../../../src/errors.js";
import { convertModelPrecision } from "../../../src/io/onnx/precision/model.js";
import { BACKEND_TESTS as ROOT, loadBackendTests, type BackendTest } from "./backend-tests.js";
import { runInChild, tempModels, type RunJob } from "./ort-run.js";

const TOLERANCE = 1e-2;

const available = existsSync(ROOT);

describe("ONNX backend node tests with float32 inputs, converted to float16 --keep-io-types", { skip: !available && `no ${ROOT}` }, () => {
  const entries: (BackendTest & { converted?: Uint8Array; refused?: string })[] = available ? loadBackendTests() : [];
  const store = tempModels();
  after(() => store.dispose());
  for (const e of entries) {
    try {
      e.converted = convertModelPrecision(readFileSync(join(ROOT, e.name, "model.onnx")), { to: "float16", keepIoTypes: true }).bytes;
    } catch (err) {
      if (!(err instanceof TensorcastError)) throw err;
      e.refused = `${err.code}: ${err.message}`;
    }
  }
  const converted = entries.filter((e) => e.converted);
  const jobs: RunJob[] = [];
  for (const e of converted) {
    jobs.push({ path: join(ROOT, e.name, "model.onnx"), feeds: e.feeds });
    jobs.push({ path: store.path(`${e.name}.onnx`, e.converted!), feeds: e.feeds });
  }
  const results = runInChild(jobs);
  let originalRuns = 0;
  let convertedRuns = 0;
  let matches = 0;
  const broken: string[] = [];
  const ortCast1: string[] = [];
  const inexact: string[] = [];
  converted.forEach((e, i) => {
    const base = results[2 * i];
    const got = results[2 * i + 1];
    if (!base.ok) return;
    originalRuns++;
    if (!got.ok) {
      // onnxruntime's own fallback for float16 operators without a CPU kernel inserts Casts in
      // Cast-6 form (INT `to`) even in an opset 1..5 graph, whose Cast-1 takes a STRING.
      if (/InsertedPrecisionFreeCast.*Mismatched attribute type/.test(got.error)) ortCast1.push(e.name);
      else broken.push(`${e.name}: ${got.error}`);
      return;
    }
    convertedRuns++;
    let worst = 0;
    for (const want of e.expected) {
      const out = got.outputs[want.name];
      if (!out) {
        worst = Infinity;
        continue;
      }
      for (let k = 0; k < want.values.length; k++) {
        const a = out.values[k];
        const b = want.values[k];
        if (Number.isNaN(a) && Number.isNaN(b)) continue;
        if (a === b) continue;
        const err = Math.abs(a - b) / Math.max(1, Math.abs(b));
        if (!(err <= worst)) worst = err;
      }
    }
    if (worst <= TOLERANCE) matches++;
    else inexact.push(`${e.name} (${worst.toPrecision(3)})`);
  });

  it("reports the counts", (t) => {
    t.diagnostic(`float32-input tests: ${entries.length}; converted: ${converted.length}; refused: ${entries.length - converted.length}`);
    t.diagnostic(`originals that run: ${originalRuns}; converted that run: ${convertedRuns}; match within ${TOLERANCE}: ${matches}`);
    t.diagnostic(`refused: ${entries.filter((e) => e.refused).map((e) => `${e.name} (${e.refused!.slice(0, 80)})`).join("; ")}`);
    t.diagnostic(`outside the tolerance: ${inexact.join(", ")}`);
    t.diagnostic(`converted but not running: ${broken.join(" | ")}`);
    t.diagnostic(`not running because of onnxruntime's Cast-6 in an opset < 6 graph: ${ortCast1.join(", ")}`);
    assert.ok(entries.length > 100, `only ${entries.length} tests found`);
  });

  it("every converted model whose original runs in onnxruntime also runs", () => {
    assert.deepEqual(broken, []);
  });
});
