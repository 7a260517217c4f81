#!/usr/bin/env node
import { internalErrorReport, main } from "../dist/node/cli/main.js";
import { EXIT_INTERNAL } from "../dist/node/cli/usage.js";

// An exception that escaped every command (thrown in a callback) is a bug like any other: the same
// one-line report and exit code, not Node's stack trace and exit 1, which means bad input here.
process.on("uncaughtException", (e) => {
  process.stderr.write(internalErrorReport(e));
  process.exit(EXIT_INTERNAL);
});
process.exitCode = await main(process.argv.slice(2));
