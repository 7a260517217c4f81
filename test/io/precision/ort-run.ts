/**
 * The parent side of ort-run-worker.ts: runs a list of jobs in one child process and returns a
 * result per job; jobs after a crash are reported as crashed (with the child's exit status).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RunJob, RunResult } from "./ort-run-worker.js";

export type { RunFeed, RunJob, RunResult } from "./ort-run-worker.js";

const WORKER = fileURLToPath(new URL("./ort-run-worker.js", import.meta.url));

/** Runs `jobs` in a child process; a crash marks the job it happened in and every later one. */
export function runInChild(jobs: RunJob[]): RunResult[] {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-ort-"));
  try {
    const list = join(dir, "jobs.json");
    writeFileSync(list, JSON.stringify(jobs));
    const r = spawnSync(process.execPath, [WORKER, list], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, timeout: 300_000 });
    const lines = r.stdout.split("\n").filter((l) => l.startsWith("R "));
    const results: RunResult[] = lines.map((l) => JSON.parse(l.slice(2)) as RunResult);
    while (results.length < jobs.length) {
      results.push({ ok: false, error: `onnxruntime's process ended (status ${r.status}, signal ${r.signal}) ${r.stderr.slice(-300)}` });
    }
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Writes model bytes into a fresh temporary folder; returns its path and a cleanup. */
export function tempModels(): { path: (name: string, bytes: Uint8Array) => string; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-models-"));
  return {
    path: (name, bytes) => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
