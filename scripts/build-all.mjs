// `npm test`'s build: the three TypeScript projects, two at a time (one tsc uses one core): the browser-safe core checked without Node's types (a Node built-in outside
// src/node fails there), the package (dist/, which bin/tensorcast.js runs), and the tests with
// benches (build/). Each project's errors are printed whole; any failure fails the build.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const run = (p) => new Promise((resolve) => {
  const child = spawn(process.execPath, [tsc, "-p", p], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  child.on("exit", (code) => resolve({ p, code, out }));
});
// The tests import the package by its own name ("tensorcast/node"), whose types are dist's: the
// test project starts once dist/ is written, the core check runs beside both.
const results = await Promise.all([
  run("tsconfig.core.json"),
  run("tsconfig.json").then(async (r) => (r.code === 0 ? [r, await run("tsconfig.test.json")] : [r])),
]).then((r) => r.flat());
for (const r of results) if (r.out.trim() !== "") process.stdout.write(`${r.p}:\n${r.out}`);
const failed = results.filter((r) => r.code !== 0);
if (failed.length > 0) {
  console.error(`build: ${failed.map((r) => r.p).join(", ")} failed`);
  process.exit(1);
}
