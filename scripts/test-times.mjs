// A node:test reporter beside the usual one (scripts/run-tests.mjs adds it): it writes one JSON
// object to its destination when the run ends, { files: { path: ms }, failures: [...] }.
// A file's time runs from the moment the runner starts its process to the file's last event,
// so it includes loading the module and any top-level await, which per-test durations miss.
// Failures keep the file, the test's name path and the first lines of the error, so that the
// runner can print the one command that reruns just that test.
export default async function* testTimes(source) {
  const started = new Map();
  const last = new Map();
  const failures = [];
  const stack = new Map(); // file -> names of the open tests, by nesting level
  for await (const event of source) {
    const data = event.data ?? {};
    const file = data.file;
    if (file === undefined) continue;
    const now = performance.now();
    if (event.type === "test:dequeue" && data.nesting === 0 && data.name === file && !started.has(file)) started.set(file, now);
    last.set(file, now);
    if (event.type === "test:start") {
      const names = stack.get(file) ?? [];
      names.length = data.nesting;
      names.push(data.name);
      stack.set(file, names);
    }
    if (event.type === "test:fail" && data.name !== file) {
      const names = (stack.get(file) ?? []).slice(0, data.nesting);
      const error = data.details?.error;
      const cause = error?.cause ?? error;
      // A parent whose subtests failed fails too; its own error says only that.
      if (error?.failureType === "subtestsFailed") continue;
      failures.push({ file, names: [...names, data.name], message: String(cause?.message ?? cause ?? "").slice(0, 4000) });
    }
  }
  const files = {};
  for (const [file, t0] of started) files[file] = Math.round(last.get(file) - t0);
  yield JSON.stringify({ files, failures }) + "\n";
}
