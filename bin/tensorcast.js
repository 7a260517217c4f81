#!/usr/bin/env node
import { existsSync } from "node:fs";

// A fresh clone has no dist/ until `npm run build` (npm ci does not build; `npm pack` and `npm
// test` do): say so in one line rather than with Node's ERR_MODULE_NOT_FOUND stack trace.
const MAIN = new URL("../dist/node/cli/main.js", import.meta.url);
if (!existsSync(MAIN)) {
  process.stderr.write("error: tensorcast is not built (no dist/node/cli/main.js): run `npm run build` in the tensorcast folder first\n");
  process.exit(70);
}
const { internalErrorReport, main } = await import(MAIN.href);
const { EXIT_INTERNAL } = await import(new URL("../dist/node/cli/usage.js", import.meta.url).href);

// An exception that escaped every command (thrown in a callback) is a bug like any other: the same
// one-line report and exit code, not Node's stack trace and exit 1, which means bad input here.
process.on("uncaughtException", (e) => {
  process.stderr.write(internalErrorReport(e));
  process.exit(EXIT_INTERNAL);
});
process.exitCode = await main(process.argv.slice(2));
