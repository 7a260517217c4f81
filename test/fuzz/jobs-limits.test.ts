/**
 * Fuzz class "--jobs under an address-space limit" (issue 24 point 7): seeded random runs of the
 * real CLI (`convert`, `inspect`, `diff`) with `--jobs` from 0 to 64, chunk sizes from 64 KiB to
 * 1 MiB (convert), on a one-chunk and a 16-chunk file and one cut short (refused when opened),
 * under `ulimit -v` from the command's own floor on this runtime (the lowest limit at which this Node runs
 * that command with --jobs 0: about 1.46 GB for convert on Node 24) to 3.5 GB above it, or none. Every
 * run must end in exit 0 with the bytes (convert) or the order-independent statistics (inspect,
 * diff) of a run without workers, or in a clean error (one `error:` line with a code); never in
 * V8's CodeRange abort (exit 133), another crash, a hang, or a temporary file left behind. Runs have
 * glibc's malloc on one arena (see runtimeFloor), so the address space a run needs is reproducible.
 *
 * Environment: TENSORCAST_FUZZ_JOBS cases (default 4 x TENSORCAST_FUZZ_CLI, which defaults to 16).
 * Needs dist/ (bin/tensorcast.js), as `npm test` builds first.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { convertFile } from "../../src/node/index.js";
import { random, randomFloat32, ROOT, safetensorsBytes, scratch } from "../node/helpers.js";
import { envCount, FULL, runs } from "../support/suite.js";

const env = envCount;
const CASES = env("TENSORCAST_FUZZ_JOBS", 4 * env("TENSORCAST_FUZZ_CLI", runs(16, 2)));
const BIN = join(ROOT, "bin", "tensorcast.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));
const TIMEOUT_MS = 60_000;

type Outcome = "accepted" | "clean error" | "crash" | "hang" | "temporary left" | "wrong result";

interface Run {
  readonly command: "convert" | "inspect" | "diff";
  readonly input: "tiny" | "multi" | "truncated";
  readonly to: string;
  readonly jobs: number;
  readonly chunk: number;
  /** kB for `ulimit -v`; undefined: none. */
  readonly limit: number | undefined;
}

const TARGETS = ["float16", "bfloat16", "float8e4m3fn", "float8e5m2", "float8e4m3fnuz", "float4e2m1"];
const JOBS = [0, 1, 2, 3, 4, 5, 8, 16, 32, 63, 64];

/** Case `i`: the same run on every machine and every time. */
export function jobsCase(i: number): Run {
  const next = random(0x10b5 + i);
  const pick = <T>(list: readonly T[]): T => list[next() % list.length];
  const r = next() % 20;
  return {
    command: r < 14 ? "convert" : r < 17 ? "inspect" : "diff",
    input: pick(["tiny", "multi", "multi", "truncated"] as const),
    to: pick(TARGETS),
    jobs: next() % 2 === 0 ? pick(JOBS) : next() % 65,
    chunk: 64 * 1024 * (1 + (next() % 16)),
    // Above the runtime's own floor (see runtimeFloor): 0 to 3.5 GB more, or none.
    limit: next() % 6 === 0 ? undefined : next() % 3_500_001,
  };
}

/**
 * The lowest `ulimit -v` (kB, to STEP) at which this Node runs `argv` (a command with --jobs 0)
 * at all. Below it the runtime itself aborts whatever --jobs says (Node 24 reserves about 1.5 GB
 * of address space for its own start, code range and WebAssembly memories; Node 20 about 1.1 GB),
 * and no program can turn V8's own out-of-memory abort into an error message. So the decision is:
 * the fuzz draws each command's limits from that command's own floor on this runtime, measured
 * here, not from convert's: `inspect` computes statistics and needs more heap than `convert`
 * (on Node 26, `inspect` of the 16-chunk file aborted at a limit where `convert` ran).
 *
 * Every run here (the floor's search and the cases) has MALLOC_ARENA_MAX=1. glibc gives a thread
 * that finds the malloc arenas busy an arena of its own, each reserving 64 MiB of address space, so
 * without it what one run needs depends on how its threads happened to meet: on Node 22 the same
 * convert ran at 742,968 kB with one arena and needed 1,059,375 kB (five arenas more) without, and
 * a search that met the lucky case once drew limits that later runs could not start in. With one
 * arena the need is the same every run, so the floor measured is the floor the cases meet.
 */
const ONE_ARENA = { ...process.env, MALLOC_ARENA_MAX: "1" };
const STEP = FULL ? 50_000 : 200_000;
function runtimeFloor(argv: readonly string[]): number {
  const ok = (limit: number): boolean =>
    spawnSync("bash", ["-c", `ulimit -v ${limit} && exec "$0" "$@"`, process.execPath, BIN, ...argv], { timeout: TIMEOUT_MS, env: ONE_ARENA }).status === 0;
  // Every runtime seen so far starts between 1.1 and 1.6 GB: bracket that first, widen if it is wrong.
  let lo = 800_000;
  let hi = 2_400_000;
  if (!ok(hi)) [lo, hi] = [hi, 4_000_000];
  else if (ok(lo)) [lo, hi] = [300_000, lo];
  if (!ok(hi)) return hi;
  while (hi - lo > STEP) {
    const mid = Math.round((lo + hi) / 2);
    if (ok(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

test(`fuzz: --jobs 0 to 64 under ulimit -v from the runtime's floor to 3.5 GB more (${CASES} cases): exit 0 with a run without workers' result, or a clean error; no abort, no temporary`, { skip: !built && "dist/ is not built (npm run build)", timeout: CASES * TIMEOUT_MS }, async () => {
  const dir = scratch();
  const inputs = {
    tiny: join(dir, "tiny.safetensors"),
    multi: join(dir, "multi.safetensors"),
    truncated: join(dir, "truncated.safetensors"),
  };
  writeFileSync(inputs.tiny, safetensorsBytes([{ name: "w", dtype: "float32", shape: [2], bytes: new Uint8Array(new Float32Array([1.5, -2.5]).buffer) }]));
  writeFileSync(inputs.multi, safetensorsBytes([
    { name: "a", dtype: "float32", shape: [256, 1024], bytes: randomFloat32(256 * 1024, 77, 600) },
    { name: "b", dtype: "float32", shape: [4], bytes: randomFloat32(4, 78) },
  ]));
  writeFileSync(inputs.truncated, readFileSync(inputs.multi).subarray(0, 700 * 1024));
  // A margin over the floor: the floor's search runs one file, the cases others. The search runs in
  // a folder of its own, removed after: its runs below the floor abort (V8 cannot start or grow
  // there), possibly after creating their temporary, which case 0 would otherwise find as its own.
  const floorDir = join(dir, "floor");
  mkdirSync(floorDir);
  const floorRef = join(floorDir, "reference.safetensors");
  await convertFile(inputs.multi, floorRef, { to: "float16", jobs: 0 });
  const jobs0 = ["--jobs", "0", "--json"];
  const floors: Record<Run["command"], number> = {
    convert: runtimeFloor(["convert", inputs.multi, "--to", "float16", "-o", join(floorDir, "floor.safetensors"), "--force", ...jobs0]) + 2 * STEP,
    inspect: runtimeFloor(["inspect", inputs.multi, ...jobs0]) + 2 * STEP,
    diff: runtimeFloor(["diff", inputs.multi, floorRef, ...jobs0]) + 2 * STEP,
  };
  rmSync(floorDir, { recursive: true, force: true });
  console.log(`# --jobs under ulimit -v: this Node (${process.version}) runs each command from ulimit -v (kB, to ${STEP}): ` +
    `${Object.entries(floors).map(([c, f]) => `${c} ${f - 2 * STEP}`).join(", ")}; its cases start ${2 * STEP} kB above that`);
  const references = new Map<string, Buffer>();
  const reference = async (input: Run["input"], to: string): Promise<Buffer> => {
    const key = `${input}.${to}`;
    let bytes = references.get(key);
    if (!bytes) {
      const path = join(dir, `reference.${key}.safetensors`);
      await convertFile(inputs[input], path, { to, jobs: 0 });
      bytes = readFileSync(path);
      references.set(key, bytes);
    }
    return bytes;
  };
  /** The statistics that do not depend on the order chunks are merged in. */
  const exact = (json: string): unknown =>
    (JSON.parse(json) as { tensors: { stats?: Record<string, unknown> }[] }).tensors.map((t) => {
      const s = t.stats ?? {};
      return ["count", "min", "max", "finite", "nan", "inf", "differing", "maxAbsError"].map((k) => s[k]);
    });
  const cli = (args: string[], limit: number | undefined): ReturnType<typeof spawnSync> =>
    spawnSync("bash", ["-c", `${limit === undefined ? "" : `ulimit -v ${limit} && `}exec "$0" "$@"`, process.execPath, BIN, ...args], {
      encoding: "utf8", timeout: TIMEOUT_MS, env: ONE_ARENA,
    });

  const tally = new Map<Outcome, number>();
  const failures: string[] = [];
  let workers = 0;
  for (let i = 0; i < CASES; i++) {
    const run = jobsCase(i);
    const input = inputs[run.input];
    const out = join(dir, `case${i}.safetensors`);
    const common = ["--jobs", String(run.jobs), "--json"];
    const args = run.command === "convert" ? ["convert", input, "--to", run.to, "-o", out, "--chunk-size", String(run.chunk), ...common]
      : run.command === "inspect" ? ["inspect", input, ...common]
      : ["diff", input, join(dir, `reference.${run.input === "truncated" ? "multi" : run.input}.${run.to}.safetensors`), ...common];
    if (run.command === "diff") await reference(run.input === "truncated" ? "multi" : run.input, run.to);
    const r = cli(args, run.limit === undefined ? undefined : floors[run.command] + run.limit);
    const stderr = String(r.stderr);
    let outcome: Outcome;
    if (r.error || r.signal === "SIGTERM") outcome = "hang";
    else if (r.status === 0 && run.input === "truncated") outcome = "wrong result";
    else if (r.status === 0) {
      outcome = "accepted";
      if (run.command === "convert") {
        workers = Math.max(workers, (JSON.parse(String(r.stdout)) as { workers: number }).workers);
        if (!readFileSync(out).equals(await reference(run.input, run.to))) outcome = "wrong result";
      } else {
        const alone = cli(args.map((a, k) => (k > 0 && args[k - 1] === "--jobs" ? "0" : a)), undefined);
        if (JSON.stringify(exact(String(r.stdout))) !== JSON.stringify(exact(String(alone.stdout)))) outcome = "wrong result";
      }
    } else if ((r.status === 1 || r.status === 2 || r.status === 74) && /^error: .*\n(Run "tensorcast help.*\n)?$/.test(stderr)) outcome = "clean error";
    else outcome = "crash";
    // A crash or a hang is counted as such; its leftover temporary is part of it.
    if ((outcome === "accepted" || outcome === "clean error") && readdirSync(dir).some((f) => f.endsWith(".tmp"))) outcome = "temporary left";
    tally.set(outcome, (tally.get(outcome) ?? 0) + 1);
    if (process.env.TENSORCAST_FUZZ_VERBOSE === "1") console.log(`# case ${i} ${JSON.stringify(run)}: ${outcome} ${stderr.trim().slice(0, 160)}`);
    if (outcome !== "accepted" && outcome !== "clean error") {
      failures.push(`case ${i} ${JSON.stringify(run)}: ${outcome} (exit ${r.status ?? r.signal}) ${stderr.trim().split("\n").slice(0, 3).join(" | ").slice(0, 300)}`);
    }
    for (const f of readdirSync(dir)) if (f.endsWith(".tmp")) rmSync(join(dir, f), { recursive: true, force: true });
    rmSync(out, { force: true });
  }
  const line = (["accepted", "clean error", "crash", "hang", "temporary left", "wrong result"] as const).map((o) => `${o} ${tally.get(o) ?? 0}`).join(", ");
  console.log(`# --jobs under ulimit -v: ${CASES} cases: ${line}; at most ${workers} workers started`);
  assert.deepEqual(failures, []);
});
