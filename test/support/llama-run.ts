/**
 * llama.cpp running tensorcast's GGUF files: node-llama-cpp (test-peers/, installed apart from
 * tensorcast: `cd test-peers && npm ci`) loads each model on the CPU, tokenizes texts with the
 * model's own vocabulary and evaluates a prompt of token ids, giving the next-token probabilities
 * at the last position.
 *
 * It runs in a child process (llama-run-child.ts): llama.cpp aborts its process on some files, and
 * the koffi peers (llama-quant-peer.ts) load the same libllama into the test process.
 *
 * The binary is node-llama-cpp's prebuilt CPU one (getLlama with gpu false, build "never",
 * skipDownload): @node-llama-cpp/linux-x64/bins/linux-x64, never a local build or a download.
 * Its ggml picks, at load, the libggml-cpu-*.so variant that best fits this CPU, so the
 * probabilities' last bits are this machine's: the tests compare two files' probabilities from the
 * same run bit for bit, and compare with other programs' only within a tolerance.
 *
 * Where node-llama-cpp is not installed the runner is missing with the reason; `peerSkip`
 * (ggml-peer.ts) turns that into a skip, except under CI=true, where the test runs and fails.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PEERS } from "./ggml-peer.js";

export const NODE_LLAMA_CPP = join(PEERS, "node_modules", "node-llama-cpp", "package.json");
const CPU_BINARY = join(PEERS, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "llama-addon.node");
const CHILD = join(dirname(fileURLToPath(import.meta.url)), "llama-run-child.js");

/** One model to run: the texts to tokenize (no special tokens added) and a prompt to evaluate. */
export interface LlamaRunJob {
  model: string;
  texts?: string[];
  prompt?: number[];
}

/** A job's result as the child sends it (the probabilities as base64 float32 bytes). */
export interface LlamaRunWire {
  model: string;
  tokens?: number[][];
  probabilities?: string;
  error?: string;
}

export interface LlamaRunResult {
  model: string;
  /** node-llama-cpp's ids of each text, where texts were given. */
  tokens?: number[][];
  /** The next-token probabilities after the prompt, by token id, as llama.cpp computed them. */
  probabilities?: Float32Array;
  /** Why llama.cpp did not load or run the model. */
  error?: string;
}

/** Why node-llama-cpp's CPU build cannot be run here, or undefined when it can. */
export function llamaRunMissing(): string | undefined {
  if (process.platform !== "linux" || process.arch !== "x64") return `the llama.cpp runner is node-llama-cpp's linux-x64 build; this is ${process.platform}-${process.arch}`;
  if (!existsSync(NODE_LLAMA_CPP)) return `${NODE_LLAMA_CPP} is not installed (cd test-peers && npm ci)`;
  if (!existsSync(CPU_BINARY)) return `${CPU_BINARY} (node-llama-cpp's prebuilt CPU binary) is not installed (cd test-peers && npm ci)`;
  return undefined;
}

/**
 * Runs the jobs in one child process, in order. A model llama.cpp refuses gives a result with its
 * error; the child dying (an abort) rejects with its exit and the end of its stderr.
 */
export async function llamaRun(jobs: readonly LlamaRunJob[]): Promise<LlamaRunResult[]> {
  const missing = llamaRunMissing();
  if (missing !== undefined) throw new Error(missing);
  const child = spawn(process.execPath, [CHILD], { stdio: ["pipe", "ignore", "pipe", "pipe"] });
  let err = "";
  let out = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (err = (err + s).slice(-4000)));
  (child.stdio[3] as NodeJS.ReadableStream).setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stdin!.end(JSON.stringify({ peers: PEERS, jobs }));
  const code = await new Promise<number | string>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (c, signal) => resolve(signal ?? c ?? -1));
  });
  if (code !== 0 || out === "") throw new Error(`the llama.cpp runner exited with ${code}: ${err.trim()}`);
  const { buildType, results } = JSON.parse(out) as { buildType: string; results: LlamaRunWire[] };
  if (buildType !== "prebuilt") throw new Error(`node-llama-cpp loaded a ${buildType} binary, not its prebuilt one`);
  return results.map((r) => ({
    model: r.model,
    tokens: r.tokens,
    error: r.error,
    probabilities: r.probabilities === undefined ? undefined : new Float32Array(new Uint8Array(Buffer.from(r.probabilities, "base64")).buffer),
  }));
}
