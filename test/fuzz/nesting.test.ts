/**
 * The nesting class of the fuzz suite (nesting.ts): every case through the real CLI (inspect,
 * convert, diff: child processes under the suite's time and memory limits, cli.ts) and, for
 * protobuf, through the library (decodeModel, convertModelPrecision, decodeTensorProto). Each
 * outcome must be accepted or a clean error, never a crash, hang or memory blow-up; a case within
 * every limit must be accepted by its first command (a limit one level too strict fails here).
 * Prints a table per class: cases, runs, accepted, clean errors, failures.
 * TENSORCAST_FUZZ_CASES / 100 random depths per class come on top of the fixed ones (at least 1);
 * with TENSORCAST_FUZZ_CLI under 16 only each case's first command runs (a quick local run).
 * The everyday suite (npm test) takes the smallest case within the limits and the smallest over
 * them from each class, so every reader's limit is still crossed both ways.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { decodeModel, decodeTensorProto, TensorcastError } from "../../src/index.js";
import { convertModelPrecision } from "../../src/onnx/index.js";
import { scratch } from "../node/helpers.js";
import { runCli, type CliVerdict } from "./cli.js";
import { nestingCases, type NestingClass } from "./nesting.js";
import { envCount, FULL, runs } from "../support/suite.js";

const env = envCount;
const RANDOM = Math.max(1, Math.round(env("TENSORCAST_FUZZ_CASES", runs(500)) / 100));
/** Below the suite's default of 16 CLI cases per format (a quick local run), each case runs its first command only. */
const ALL_COMMANDS = env("TENSORCAST_FUZZ_CLI", runs(16)) >= 16;
const LIMITS = { timeoutMs: env("TENSORCAST_FUZZ_TIMEOUT_MS", 30_000), heapMb: 512, rssLimitBytes: 1536 * 2 ** 20 };
const dir = scratch();

/** Per class, the smallest case within every limit and the smallest beyond one. */
function smokeCases(all: ReturnType<typeof nestingCases>): ReturnType<typeof nestingCases> {
  const size = (c: (typeof all)[number]): number => Object.values(c.files).reduce((n, b) => n + b.length, 0);
  const pick = new Map<string, (typeof all)[number]>();
  for (const c of all) {
    const key = `${c.kind}/${c.within}`;
    const best = pick.get(key);
    if (best === undefined || size(c) < size(best)) pick.set(key, c);
  }
  return all.filter((c) => [...pick.values()].includes(c));
}

interface Tally { cases: number; runs: number; accepted: number; clean: number; failed: number }

test("deep nesting in every JSON and protobuf reader: accepted or a clean error, never a crash, hang or blow-up", { timeout: 3_600_000 }, async () => {
  const cases = FULL ? nestingCases(RANDOM) : smokeCases(nestingCases(RANDOM, false));
  const tallies = new Map<NestingClass, Tally>();
  const failures: string[] = [];
  let outputs = 0;
  const jobs: (() => Promise<void>)[] = [];
  cases.forEach((c, i) => {
    const folder = join(dir, `case-${i}`);
    for (const [name, bytes] of Object.entries(c.files)) {
      mkdirSync(dirname(join(folder, name)), { recursive: true });
      writeFileSync(join(folder, name), bytes);
    }
    const t = tallies.get(c.kind) ?? { cases: 0, runs: 0, accepted: 0, clean: 0, failed: 0 };
    tallies.set(c.kind, t);
    t.cases++;
    const record = (what: string, kind: CliVerdict["kind"], detail: string, first: boolean): void => {
      t.runs++;
      if (kind === "ok") t.accepted++;
      else if (kind === "clean") t.clean++;
      else {
        t.failed++;
        failures.push(`${c.kind}: ${c.label}: ${what}: ${kind} ${detail}`);
      }
      if (first && c.within && kind !== "ok") failures.push(`${c.kind}: ${c.label}: ${what}: within every limit but refused (${detail})`);
    };
    (ALL_COMMANDS ? c.cli : c.cli.slice(0, 1)).forEach((argv, k) => {
      const args = argv.map((a) => a.replace("$D", folder).replace("$O", join(dir, `out-${outputs++}`)));
      jobs.push(async () => {
        const v = await runCli(args, LIMITS);
        record(`cli ${argv[0]}`, v.kind, v.detail, k === 0);
      });
    });
    for (const call of c.library) {
      jobs.push(async () => {
        try {
          if (call === "decodeModel") decodeModel(c.bytes!);
          else if (call === "decodeTensorProto") decodeTensorProto(c.bytes!);
          else convertModelPrecision(c.bytes!, { to: "float16" });
          record(call, "ok", "", false);
        } catch (e) {
          if (e instanceof TensorcastError && e.code !== "INTERNAL") record(call, "clean", e.code, false);
          else record(call, "crash", `${(e as Error).name}: ${(e as Error).message}`.slice(0, 200), false);
        }
      });
    }
  });
  // Two at a time, like the rest of the suite.
  let next = 0;
  await Promise.all([0, 1].map(async () => {
    while (next < jobs.length) await jobs[next++]();
  }));
  const rows = [...tallies].map(([kind, t]) => `${kind.padEnd(20)} ${String(t.cases).padStart(6)} ${String(t.runs).padStart(6)} ${String(t.accepted).padStart(9)} ${String(t.clean).padStart(7)} ${String(t.failed).padStart(7)}`);
  console.log(["nesting class          cases   runs  accepted   clean  failed", ...rows].join("\n"));
  if (failures.length > 0) console.log(failures.join("\n"));
  assert.deepEqual(failures, []);
});
