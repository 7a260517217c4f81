// The test runner behind `npm test` (the everyday suite) and `npm run test:full` (everything).
//
//   node scripts/run-tests.mjs [--full] [PATH ...] [--test-name-pattern=RE ...]
//
// PATH: test files or folders, as sources (test/ops/cast.test.ts, test/ops) or compiled
// (build/test/ops/cast.test.js); default: all of build/test. Options starting with --test- go to
// node's runner as they are.
//
// A file whose first line is `// suite: full` belongs to the full suite only; the everyday suite
// leaves it out unless it is named as a file. --full sets TENSORCAST_SUITE=full, which
// test/support/suite.ts reads (full random counts, the tests marked fullOnly).
//
// Files are listed here rather than handed to node as a folder: Node 20 searches a directory
// given to --test, Node 22+ takes arguments as files or globs and fails on a directory, and Node
// 20 does not expand globs. The files run in parallel (TENSORCAST_TEST_CONCURRENCY, default 3:
// many of them wait on child processes, so one more than the cores keeps both busy).
//
// After node's own report this prints the ten slowest files with their times, and for each failed
// test the one command that reruns just it (with fast-check's seed and path when a property
// failed), then repeats node's summary lines so that they end the log.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";

const args = process.argv.slice(2);
const full = args.includes("--full");
const nodeOptions = args.filter((a) => a.startsWith("--test-"));
const roots = args.filter((a) => a !== "--full" && !a.startsWith("--test-"));
const unknown = roots.filter((a) => a.startsWith("-"));
if (unknown.length > 0) {
  console.error(`run-tests: unknown option ${unknown.join(", ")}; allowed: --full, PATH..., and node's --test-* options`);
  process.exit(2);
}
if (full && process.env.TENSORCAST_SUITE === undefined) process.env.TENSORCAST_SUITE = "full";
const fullSuite = process.env.TENSORCAST_SUITE === "full";

/** A source path (test/x.test.ts, test/ops) to its compiled form under build/; others unchanged. */
function compiled(path) {
  const p = relative(process.cwd(), resolve(path));
  if (p === "test" || p.startsWith("test/")) return join("build", p.replace(/\.ts$/, ".js"));
  return p;
}

function isFullOnly(file) {
  const head = readFileSync(file, "utf8").slice(0, 200);
  return /^(#![^\n]*\n)?\/\/ suite: full\b/.test(head);
}

const leftOut = [];
function testFiles(path, named) {
  if (!existsSync(path)) {
    console.error(`run-tests: ${path} does not exist (give test files or folders, as test/... sources or build/test/... after the build)`);
    process.exit(2);
  }
  if (statSync(path).isFile()) {
    if (!path.endsWith(".test.js")) {
      console.error(`run-tests: ${path} is not a test file (*.test.ts, compiled to *.test.js)`);
      process.exit(2);
    }
    if (!named && !fullSuite && isFullOnly(path)) {
      leftOut.push(path);
      return [];
    }
    return [path];
  }
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? testFiles(join(path, e.name), false) : e.name.endsWith(".test.js") ? testFiles(join(path, e.name), false) : []));
}

const files = (roots.length > 0 ? roots.map(compiled) : ["build/test"]).flatMap((p) => testFiles(p, roots.length > 0 && !statSync(p).isDirectory()));
if (files.length === 0) {
  console.error(`run-tests: no test files to run under ${roots.join(", ") || "build/test"}${leftOut.length ? ` (${leftOut.length} full-suite files left out: npm run test:full)` : ""}`);
  process.exit(1);
}

const concurrency = Number(process.env.TENSORCAST_TEST_CONCURRENCY || 3);
const work = mkdtempSync(join(tmpdir(), "tensorcast-run-tests-"));
const timesFile = join(work, "times.json");
const reporter = process.stdout.isTTY ? "spec" : "tap";
const child = spawn(process.execPath, [
  "--test", `--test-concurrency=${concurrency}`,
  `--test-reporter=${reporter}`, "--test-reporter-destination=stdout",
  `--test-reporter=${new URL("./test-times.mjs", import.meta.url).href}`, `--test-reporter-destination=${timesFile}`,
  ...nodeOptions, ...files,
], { stdio: ["inherit", "pipe", "inherit"] });

// node's summary: "# pass 12" (tap) or "ℹ pass 12" (spec), at the end of its report.
const summaryLine = /^(# |ℹ )(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /;
let summary = [];
let pending = "";
child.stdout.on("data", (chunk) => {
  process.stdout.write(chunk);
  pending += chunk.toString("utf8");
  const lines = pending.split("\n");
  pending = lines.pop();
  for (const line of lines) {
    const plain = line.replace(/\x1b\[[0-9;]*m/g, "");
    if (summaryLine.test(plain)) summary.push(plain);
    else if (plain.trim() !== "" && summary.length > 0 && !summaryLine.test(plain)) summary = [];
  }
});

function quote(s) {
  return /^[\w./=:-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

child.on("exit", (code, signal) => {
  let times = { files: {}, failures: [] };
  try {
    times = JSON.parse(readFileSync(timesFile, "utf8"));
  } catch {
    // An interrupted run writes no times; node's own report above says what happened.
  }
  rmSync(work, { recursive: true, force: true });
  const slowest = Object.entries(times.files).sort((a, b) => b[1] - a[1]).slice(0, 10);
  if (slowest.length > 0) {
    console.log(`\n# the ten slowest test files, by the time in their tests (of ${files.length} files, ${concurrency} at a time${fullSuite ? ", full suite" : ""}):`);
    for (const [file, ms] of slowest) console.log(`#   ${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(process.cwd(), file)}`);
  }
  if (leftOut.length > 0) console.log(`# ${leftOut.length} full-suite files left out (npm run test:full runs them)`);
  if (times.failures.length > 0) {
    console.log(`\n# to rerun just what failed:`);
    const envs = ["TENSORCAST_SUITE", "TENSORCAST_RUNS"].filter((k) => process.env[k]).map((k) => `${k}=${quote(process.env[k])}`);
    for (const f of times.failures.slice(0, 20)) {
      const fc = /seed: (-?\d+), path: "?([\d:]+)"?/.exec(f.message);
      const fcEnv = fc ? [`TENSORCAST_FC_SEED=${fc[1]}`, `TENSORCAST_FC_PATH=${fc[2]}`] : [];
      const source = relative(process.cwd(), f.file).replace(/^build\//, "").replace(/\.js$/, ".ts");
      // A file that failed outside any test (it did not load) has no name to pick.
      const pick = f.names.length > 0 ? ` ${quote(`--test-name-pattern=^${escapeRegExp(f.names[0])}$`)}` : "";
      console.log(`#   ${f.names.length > 0 ? f.names.join(" > ") : `${source} (outside any test): ${f.message.split("\n")[0].slice(0, 200)}`}`);
      console.log(`#     ${[...envs, ...fcEnv].join(" ")}${envs.length + fcEnv.length ? " " : ""}npm test -- ${quote(source)}${pick}`);
      // Why, in a few lines: CI's log keeps only its end, where this list is.
      const why = f.message.split("\n").map((l) => l.trim()).filter((l) => l !== "").slice(0, 3).map((l) => l.slice(0, 300));
      if (f.names.length > 0) for (const l of why) console.log(`#       ${l}`);
    }
    if (times.failures.length > 20) console.log(`#   ... and ${times.failures.length - 20} more`);
  }
  if (summary.length > 0) console.log(["", ...summary].join("\n"));
  process.exit(signal ? 1 : (code ?? 1));
});
