// `npm run test:full`'s first step: installs test-peers/ (llama.cpp's libggml-base from
// node-llama-cpp, and koffi to call it) from its own lockfile when it is not installed yet. It is
// kept out of the package's devDependencies: with every platform's binaries it is about 730 MB,
// which a newcomer's `npm ci` and `npm test` never need.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const folder = new URL("../test-peers/", import.meta.url);
if (existsSync(new URL("package.json", folder)) && !existsSync(new URL("node_modules/koffi/package.json", folder))) {
  console.log("test-peers: npm ci --ignore-scripts (node-llama-cpp, koffi; about 730 MB)");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["ci", "--ignore-scripts", "--no-audit", "--no-fund"], { cwd: folder, stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`test-peers: npm ci failed (exit ${r.status ?? r.signal}); the GGML peer tests will say so`);
    process.exit(process.env.CI === "true" ? 1 : 0);
  }
}
