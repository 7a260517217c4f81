/**
 * Whole-model conversion fuzz (issue 24): the models of graphs.ts (node floods, field floods,
 * shadowed subgraph names) through the real CLI, `convert IN.onnx --to T -o OUT.onnx`, under a
 * time and a memory limit. Outcomes per case: accepted (exit 0 and an output in single static
 * assignment form that onnx.checker accepts whenever it accepts the input and can read the
 * output's opset; inputs under 1 MiB, as its full check of a 200,001-node chain takes minutes),
 * clean error (exit 1, one coded line), or a failure: crash (another exit, a signal, V8's abort),
 * hang, memory, or invalid output. Prints the totals per class and fails when
 * any failure count is not zero.
 *
 * TENSORCAST_FUZZ_CASES (default 500) scales the random cases: a tenth of it per class, at least 4.
 * The heavy cases (the sizes from the issue) run once each.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { bodiesOf } from "../../src/io/onnx/precision/graph.js";
import { PbMessage } from "../../src/io/onnx/precision/pb.js";
import { PYTHON } from "../support/onnx-peer.js";
import { envCount, FULL, runs } from "../support/suite.js";
import { onnxMissing } from "../support/python.js";
import { runCli } from "./cli.js";
import { GRAPH_CLASSES, graphCase, heavyGraphCases, type GraphCase, type GraphClass } from "./graphs.js";

const CASES = Math.max(4, Math.floor(envCount("TENSORCAST_FUZZ_CASES", runs(500)) / 10));
const LIGHT = { timeoutMs: 30_000, heapMb: 1024, rssLimitBytes: 1536 * 2 ** 20 };
// The bound for the 40 MB floods: under 2 GiB resident.
const HEAVY = { timeoutMs: 180_000, heapMb: 2048, rssLimitBytes: 2 * 2 ** 30 };

type Outcome = "accepted" | "clean" | "crash" | "hang" | "memory" | "invalid";
const COLUMNS: readonly Outcome[] = ["accepted", "clean", "crash", "hang", "memory", "invalid"];

/** A node output written twice, or naming a value an enclosing graph defines; undefined when none. */
function ssaProblem(bytes: Uint8Array): string | undefined {
  const written = new Set<string>();
  const walk = (g: PbMessage, outer: ReadonlySet<string>): string | undefined => {
    const here = new Set(outer);
    for (const t of g.subs(5, "TensorProto")) here.add(t.string(8));
    for (const v of g.subs(11, "ValueInfoProto")) here.add(v.string(1));
    const nodes = g.subs(1, "NodeProto");
    for (const n of nodes) {
      for (const s of n.strings(2)) {
        if (s === "") continue;
        if (written.has(s)) return `${JSON.stringify(s)} is written twice`;
        if (outer.has(s)) return `${JSON.stringify(s)} in graph ${JSON.stringify(g.string(2))} repeats an enclosing graph's name`;
        written.add(s);
        here.add(s);
      }
    }
    for (const n of nodes) {
      for (const b of bodiesOf(n)) {
        const p = walk(b, here);
        if (p) return p;
      }
    }
    return undefined;
  };
  return walk(PbMessage.parse(bytes, "ModelProto").sub(7, "GraphProto")!, new Set());
}

/** The default opset a model imports. */
function opsetOf(bytes: Uint8Array): number {
  const m = PbMessage.parse(bytes, "ModelProto");
  const o = m.subs(8, "OperatorSetIdProto").find((x) => x.string(1) === "");
  return Number(o?.varint(2) ?? 0n);
}

const CHECKER = `
import onnx, sys, json
out = []
for path in sys.argv[1:]:
    try:
        onnx.checker.check_model(onnx.load(path), full_check=True)
        out.append("ok")
    except Exception as e:
        out.append(str(e).splitlines()[0][:200] or type(e).__name__)
print(json.dumps(out))
`;

const pythonOnnx = onnxMissing() === undefined;

test("fuzz: whole-model conversion of node floods, field floods and shadowed subgraph names never crashes, hangs, blows up or writes an invalid model", { skip: !pythonOnnx && !process.env.CI && "no python3 with onnx" }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-graphs-"));
  try {
    // The heavy floods (the sizes, minutes of work) are the full suite's.
    const cases: GraphCase[] = FULL ? [...heavyGraphCases()] : [];
    for (const cls of GRAPH_CLASSES) for (let i = 0; i < CASES; i++) cases.push(graphCase(cls, i));
    const outcome: Outcome[] = [];
    const details: string[] = [];
    const toCheck: [number, string, string][] = [];
    const started = Date.now();
    let next = 0;
    const runOne = async (k: number): Promise<void> => {
      const c = cases[k];
      const input = join(dir, `${k}.onnx`);
      const output = join(dir, `${k}.out.onnx`);
      writeFileSync(input, c.bytes);
      const v = await runCli(["convert", input, "--to", c.to, ...c.flags, "-o", output, "--quiet"], c.heavy ? HEAVY : LIGHT);
      if (v.kind === "ok") {
        const problem = existsSync(output) ? ssaProblem(readFileSync(output)) : "exit 0 without an output";
        if (problem) {
          outcome[k] = "invalid";
          details[k] = problem;
        } else {
          outcome[k] = "accepted";
          if (opsetOf(c.bytes) <= 17 && opsetOf(readFileSync(output)) <= 17 && c.bytes.length < 2 ** 20) toCheck.push([k, input, output]);
          else rmSync(output);
        }
      } else {
        outcome[k] = v.kind === "clean" ? "clean" : v.kind === "unsafe" ? "crash" : v.kind;
        details[k] = v.detail;
      }
      if (!toCheck.some(([i]) => i === k)) rmSync(input, { force: true });
    };
    await Promise.all([0, 1].map(async () => {
      for (let k = next++; k < cases.length; k = next++) await runOne(k);
    }));
    const cliSeconds = (Date.now() - started) / 1000;

    // The peer: onnx.checker on each accepted output whose input it accepts too.
    if (pythonOnnx && toCheck.length > 0) {
      const paths = toCheck.flatMap(([, i, o]) => [i, o]);
      const r = spawnSync(PYTHON, ["-c", CHECKER, ...paths], { encoding: "utf8", maxBuffer: 64 * 2 ** 20, timeout: 600_000 });
      assert.equal(r.status, 0, r.stderr.slice(-500));
      const verdicts = JSON.parse(r.stdout) as string[];
      toCheck.forEach(([k], j) => {
        const [before, after] = [verdicts[2 * j], verdicts[2 * j + 1]];
        if (before === "ok" && after !== "ok") {
          outcome[k] = "invalid";
          details[k] = `onnx.checker accepts the input, refuses the output: ${after}`;
        }
      });
    }

    const rows = new Map<GraphClass, Record<Outcome | "cases", number>>();
    for (const cls of GRAPH_CLASSES) rows.set(cls, { cases: 0, accepted: 0, clean: 0, crash: 0, hang: 0, memory: 0, invalid: 0 });
    cases.forEach((c, k) => {
      const row = rows.get(c.cls)!;
      row.cases++;
      row[outcome[k]]++;
    });
    const header = ["class", "cases", "accepted", "clean errors", "crashes", "hangs", "memory", "invalid outputs"];
    const lines = [header.join(" | "), ...GRAPH_CLASSES.map((cls) => {
      const r = rows.get(cls)!;
      return [cls, r.cases, ...COLUMNS.map((o) => r[o])].join(" | ");
    })];
    const failures = cases.flatMap((c, k) => (["crash", "hang", "memory", "invalid"].includes(outcome[k]) ? [`${c.cls} / ${c.label} (--to ${c.to} ${c.flags.join(" ")}): ${outcome[k]}: ${details[k]}`] : []));
    const cleanCodes = cases.flatMap((c, k) => (outcome[k] === "clean" ? [`${c.label}: ${details[k]}`] : []));
    console.log(`whole-model conversion fuzz: ${cases.length} cases through the CLI in ${cliSeconds.toFixed(0)} s, ${toCheck.length} outputs checked by onnx.checker\n${lines.join("\n")}` +
      (cleanCodes.length ? `\nclean errors:\n  ${cleanCodes.slice(0, 20).join("\n  ")}` : "") +
      (failures.length ? `\nfailures:\n  ${failures.join("\n  ")}` : ""));
    assert.deepEqual(failures, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
