/** The quantize helper thread (./quant-helper.ts): runs the chunks the calling thread copies in. */
import { workerData } from "node:worker_threads";
import { serveQuantPipeline } from "../kernels/quant/pipeline.js";

serveQuantPipeline((workerData as { memory: Parameters<typeof serveQuantPipeline>[0] }).memory);
