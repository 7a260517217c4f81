/**
 * The child process of llama-run.ts: node-llama-cpp from test-peers/ on the jobs given as JSON on
 * stdin, the results written as one JSON line to fd 3 (node-llama-cpp and llama.cpp log to stdout
 * and stderr, which stay theirs). Kept apart from the test process because llama.cpp aborts the
 * whole process on some files (GGML_ASSERT), and because the koffi peers load the same libllama.
 */
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { LlamaRunJob, LlamaRunWire } from "./llama-run.js";

interface NlcModel {
  tokenize(text: string, specialTokens?: boolean): number[];
  createContext(o: Record<string, unknown>): Promise<NlcContext>;
  dispose(): Promise<void>;
}
interface NlcContext {
  getSequence(): { controlledEvaluate(input: unknown[]): Promise<({ next?: { probabilities?: Map<number, number> } } | undefined)[]> };
  dispose(): Promise<void>;
}
interface Nlc {
  getLlama(o: Record<string, unknown>): Promise<{ loadModel(o: Record<string, unknown>): Promise<NlcModel>; buildType: string; gpu: unknown; dispose(): Promise<void> }>;
  LlamaLogLevel: Record<string, string>;
}

async function read(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function run(job: LlamaRunJob, nlc: Awaited<ReturnType<Nlc["getLlama"]>>): Promise<LlamaRunWire> {
  let model: NlcModel | undefined;
  try {
    model = await nlc.loadModel({ modelPath: job.model, gpuLayers: 0, useMmap: false });
    const tokens = job.texts?.map((t) => model!.tokenize(t, false));
    let probabilities: string | undefined;
    if (job.prompt !== undefined) {
      // One thread and one batch holding the whole prompt: the same graph on every run. The KV
      // cache in float32 (llama.cpp's default is F16, which alone moves an F32 model's
      // probabilities by some 1e-4) and no flash attention ("auto" would depend on the build).
      const ctx = await model.createContext({
        contextSize: 128, batchSize: 128, threads: 1, sequences: 1, flashAttention: false,
        experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
      });
      try {
        const ids = job.prompt;
        const res = await ctx.getSequence().controlledEvaluate([...ids.slice(0, -1), [ids[ids.length - 1], { generateNext: { probabilities: true } }]]);
        const map = res[res.length - 1]?.next?.probabilities;
        if (map === undefined) throw new Error("no probabilities for the last prompt position");
        // node-llama-cpp's greedy sampler leaves the logits as they are; its softmax is float32.
        const out = new Float32Array(map.size);
        for (const [id, p] of map) {
          if (id < 0 || id >= out.length) throw new Error(`token id ${id} outside the ${out.length} probabilities`);
          out[id] = p;
        }
        probabilities = Buffer.from(out.buffer).toString("base64");
      } finally {
        await ctx.dispose();
      }
    }
    return { model: job.model, tokens, probabilities };
  } catch (e) {
    return { model: job.model, error: (e as Error).message };
  } finally {
    await model?.dispose();
  }
}

const { peers, jobs } = JSON.parse(await read()) as { peers: string; jobs: LlamaRunJob[] };
const require = createRequire(join(peers, "package.json"));
const nlc = (await import(require.resolve("node-llama-cpp"))) as Nlc;
// gpu false: the CPU prebuilt (@node-llama-cpp/linux-x64); build "never" and skipDownload: no
// compiling and no network, a missing binary is an error here rather than a build.
const llama = await nlc.getLlama({
  gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true, progressLogs: false,
  logLevel: nlc.LlamaLogLevel.error, logger: () => undefined, maxThreads: 1,
});
const results: LlamaRunWire[] = [];
for (const job of jobs) results.push(await run(job, llama));
writeSync(3, JSON.stringify({ buildType: llama.buildType, results }) + "\n");
await llama.dispose();
