/**
 * A pool of worker threads running conversion tasks, one task per worker at a time, in the order
 * given. With no workers it runs each task in the main thread (used for small files, where
 * starting threads costs more than it saves).
 *
 * Workers are started when there is work for them, never more than there are tasks waiting, cores
 * (os.availableParallelism) or room in the address-space limit (address-space.ts): `--jobs 64` on a
 * file of one chunk starts one. A worker that fails to start (its thread or script) is dropped and
 * the pool goes on with those that started, or in the calling thread when none did; tasks are only
 * sent to a worker once it said it is ready, so none is lost with it. A worker that stops while it
 * holds a task fails the pool with WORKER_FAILED.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { TensorcastError, type ErrorCode } from "../../index.js";
import { WORKER_CODE_RANGE_MB, workersThatFit } from "./address-space.js";
import { isReady, type Request, type Response, type Task, type TaskResult, type WorkerMessage } from "./protocol.js";
import { runTask } from "./run-task.js";

interface Pending {
  readonly id: number;
  readonly task: Task;
  resolve(result: TaskResult): void;
  reject(error: Error): void;
}

export interface TaskPoolOptions {
  /** The worker script (default: worker.js beside this module); tests give one that fails to start. */
  readonly script?: URL;
}

export class TaskPool {
  /** The most workers it runs at once: what was asked, at most one per core and what the address-space limit leaves room for (0: none). */
  readonly size: number;
  private readonly script: URL;
  private readonly workers = new Set<Worker>();
  private readonly idle: Worker[] = [];
  private readonly queue: Pending[] = [];
  private readonly running = new Map<Worker, Pending>();
  /** Workers started but not ready yet, and ready ones; `limit` drops when a start fails. */
  private starting = 0;
  private ready = 0;
  private limit: number;
  private nextId = 0;
  private broken: Error | undefined;
  private closing = false;

  /** A pool of up to `workers` threads (0: run tasks in the calling thread). */
  constructor(workers: number, opts: TaskPoolOptions = {}) {
    const asked = Number.isFinite(workers) ? Math.max(0, Math.floor(workers)) : 0;
    this.size = asked === 0 ? 0 : Math.min(asked, availableParallelism(), workersThatFit(0));
    this.limit = this.size;
    this.script = opts.script ?? new URL("./worker.js", import.meta.url);
  }

  /** The workers started, less those that failed to (at most `size`; fewer for little work). */
  get started(): number {
    return this.ready + this.starting;
  }

  /** Runs `task`; its input buffers are handed to the worker and must not be used afterwards. */
  run(task: Task): Promise<TaskResult> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.size === 0) return runHere(task);
    return new Promise<TaskResult>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, task, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const w = this.idle.pop()!;
      const p = this.queue.shift()!;
      this.running.set(w, p);
      const request: Request = { id: p.id, task: p.task };
      w.postMessage(request, transferList(p.task));
    }
    while (this.queue.length > this.starting && this.ready + this.starting < this.limit) {
      if (workersThatFit(this.starting) < 1) this.limit = this.ready + this.starting;
      else this.start();
    }
    if (this.queue.length > 0 && this.ready + this.starting === 0) {
      // No worker could start: the calling thread does the work, as with --jobs 0.
      for (const p of this.queue.splice(0)) runHere(p.task).then(p.resolve, p.reject);
    }
  }

  private start(): void {
    let w: Worker;
    try {
      w = new Worker(this.script, { resourceLimits: { codeRangeSizeMb: WORKER_CODE_RANGE_MB } });
    } catch {
      this.limit = this.ready + this.starting;
      return;
    }
    this.workers.add(w);
    this.starting++;
    let state: "starting" | "ready" | "gone" = "starting";
    const notStarted = (): void => {
      if (state !== "starting") return;
      state = "gone";
      this.starting--;
      this.workers.delete(w);
      this.limit = this.ready + this.starting;
      void w.terminate();
      if (!this.broken) this.dispatch();
    };
    w.on("message", (m: WorkerMessage) => {
      if (state === "starting" && isReady(m)) {
        state = "ready";
        this.starting--;
        this.ready++;
        this.idle.push(w);
        if (!this.broken) this.dispatch();
      } else if (state === "ready" && !isReady(m)) {
        this.settle(w, m);
      }
    });
    w.on("error", (e) => {
      if (state === "starting") notStarted();
      else if (state === "ready") this.fail(new TensorcastError("WORKER_FAILED", `a conversion worker thread failed: ${e.message}`));
    });
    w.on("exit", (code) => {
      if (state === "starting") notStarted();
      else if (state === "ready" && (this.running.has(w) || (code !== 0 && !this.closing))) {
        this.fail(new TensorcastError("WORKER_FAILED", `a conversion worker thread exited with code ${code}`));
      }
    });
  }

  private settle(w: Worker, response: Response): void {
    const p = this.running.get(w);
    if (!p || p.id !== response.id) return;
    this.running.delete(w);
    this.idle.push(w);
    if ("error" in response) {
      const e = response.error;
      p.reject(e.code ? new TensorcastError(e.code as ErrorCode, e.message) : Object.assign(new Error(e.message), { name: e.name }));
    } else {
      p.resolve(response.result);
    }
    this.dispatch();
  }

  private fail(e: Error): void {
    if (this.broken) return;
    this.broken = e;
    for (const p of [...this.running.values(), ...this.queue.splice(0)]) p.reject(e);
    this.running.clear();
  }

  /** Stops the workers; tasks still queued are rejected. */
  async close(): Promise<void> {
    this.closing = true;
    this.fail(new Error("the conversion pool was closed"));
    await Promise.all([...this.workers].map((w) => w.terminate()));
  }
}

/** Runs `task` in the calling thread, its errors as a rejection. */
function runHere(task: Task): Promise<TaskResult> {
  try {
    return Promise.resolve(runTask(task));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** The input buffers of a task that can be moved to a worker rather than copied. */
function transferList(task: Task): ArrayBuffer[] {
  const views = task.op === "diff" ? [task.a, task.b] : task.op === "convert" && task.into ? [task.raw, task.into] : task.op === "quantize" && task.imatrix ? [task.raw, task.imatrix] : [task.raw];
  const out: ArrayBuffer[] = [];
  for (const v of views) {
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && !(v.buffer instanceof SharedArrayBuffer);
    if (whole && !out.includes(v.buffer as ArrayBuffer)) out.push(v.buffer as ArrayBuffer);
  }
  return out;
}
