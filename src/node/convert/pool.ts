/**
 * A pool of worker threads running conversion tasks, one task per worker at a time, in the order
 * given. With no workers it runs each task in the main thread (used for small files, where
 * starting threads costs more than it saves).
 */
import { Worker } from "node:worker_threads";
import { TensorcastError, type ErrorCode } from "../../index.js";
import type { Request, Response, Task, TaskResult } from "./protocol.js";
import { runTask } from "./run-task.js";

interface Pending {
  readonly id: number;
  readonly task: Task;
  resolve(result: TaskResult): void;
  reject(error: Error): void;
}

export class TaskPool {
  readonly size: number;
  private readonly workers: Worker[] = [];
  private readonly idle: Worker[] = [];
  private readonly queue: Pending[] = [];
  private readonly running = new Map<Worker, Pending>();
  private nextId = 0;
  private broken: Error | undefined;
  private closing = false;

  /** A pool of `workers` threads (0: run tasks in the calling thread). */
  constructor(workers: number) {
    this.size = Math.max(0, Math.floor(workers));
    for (let i = 0; i < this.size; i++) {
      const w = new Worker(new URL("./worker.js", import.meta.url));
      w.on("message", (response: Response) => this.settle(w, response));
      w.on("error", (e) => this.fail(e));
      w.on("exit", (code) => {
        if (this.running.has(w) || (code !== 0 && !this.closing)) this.fail(new Error(`a conversion worker exited with code ${code}`));
      });
      this.workers.push(w);
      this.idle.push(w);
    }
  }

  /** Runs `task`; its input buffers are handed to the worker and must not be used afterwards. */
  run(task: Task): Promise<TaskResult> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.size === 0) {
      try {
        return Promise.resolve(runTask(task));
      } catch (e) {
        return Promise.reject(e);
      }
    }
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
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/** The input buffers of a task that can be moved to a worker rather than copied. */
function transferList(task: Task): ArrayBuffer[] {
  const views = task.op === "diff" ? [task.a, task.b] : task.op === "convert" && task.into ? [task.raw, task.into] : [task.raw];
  const out: ArrayBuffer[] = [];
  for (const v of views) {
    const whole = v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && !(v.buffer instanceof SharedArrayBuffer);
    if (whole && !out.includes(v.buffer as ArrayBuffer)) out.push(v.buffer as ArrayBuffer);
  }
  return out;
}
