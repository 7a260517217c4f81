// A node:test reporter beside the usual one (scripts/run-tests.mjs adds it): it writes one JSON
// object to its destination when the run ends, { files: { path: ms }, failures: [...] }.
// A file's time is the sum of its top-level tests' durations (they run one after another in the
// file's own process); the runner may start every file's process at once, so timestamps between
// its events would mostly measure the queue. Loading the module is not counted.
// Failures keep the file, the test's name path and the first lines of the error, so that the
// runner can print the one command that reruns just that test. Failing todo tests are not failures.
export default async function* testTimes(source) {
  const files = {};
  const failures = [];
  const stack = new Map(); // file -> names of the open tests, by nesting level
  for await (const event of source) {
    const data = event.data ?? {};
    const file = data.file;
    if (file === undefined) continue;
    if (event.type === "test:start") {
      const names = stack.get(file) ?? [];
      names.length = data.nesting;
      names.push(data.name);
      stack.set(file, names);
    }
    if ((event.type === "test:pass" || event.type === "test:fail") && data.nesting === 0 && data.name !== file) {
      files[file] = (files[file] ?? 0) + (data.details?.duration_ms ?? 0);
    }
    if (event.type === "test:fail") {
      const error = data.details?.error;
      const cause = error?.cause ?? error;
      // A parent whose subtests failed fails too; its own error says only that.
      if (error?.failureType === "subtestsFailed") continue;
      // A todo test that fails does not fail the run; listing it would push the real failures out
      // of the list's first twenty and out of CI's log tail.
      if (data.todo !== undefined && data.todo !== false) continue;
      const names = data.name === file ? [] : [...(stack.get(file) ?? []).slice(0, data.nesting), data.name];
      failures.push({ file, names, message: String(cause?.message ?? cause ?? "").slice(0, 4000) });
    }
  }
  for (const f of Object.keys(files)) files[f] = Math.round(files[f]);
  yield JSON.stringify({ files, failures }) + "\n";
}
