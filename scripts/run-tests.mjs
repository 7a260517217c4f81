// `npm test`: runs every compiled *.test.js under build/test with node's own test runner.
// Node 20 searches a directory given to --test; Node 22+ takes each argument as a file or glob
// pattern and fails on a directory ("Cannot find module .../build/test"), while Node 20 does not
// expand globs. Listing the files ourselves works the same on every version.
// Arguments: folders or files under build/test to restrict the run to (default: all of it).
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

function testFiles(path) {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((e) => (e.isDirectory() ? testFiles(join(path, e.name)) : e.name.endsWith(".test.js") ? [join(path, e.name)] : []));
}

const roots = process.argv.slice(2);
const files = (roots.length > 0 ? roots : ["build/test"]).flatMap(testFiles);
if (files.length === 0) {
  console.error(`run-tests: no *.test.js files under ${roots.join(", ") || "build/test"}`);
  process.exit(1);
}
const child = spawn(process.execPath, ["--test", ...files], { stdio: "inherit" });
child.on("exit", (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
