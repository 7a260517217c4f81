/**
 * Two threads for large quantize / dequantize jobs on ordinary arrays.
 *
 * Why: WebAssembly reads only its own memory, so an ordinary array is copied in and the codes
 * copied out around the kernel. On one thread the copies and the kernel take turns: on 4 Mi
 * float32 the copies alone run at about onnxruntime's whole QuantizeLinear (which streams its
 * input once, the arithmetic hidden under the loads), and the kernel comes on top (0.6-0.75x of
 * onnxruntime). Here the calling thread does the copies and a helper thread runs the kernels on
 * the chunks already copied, so the two overlap.
 *
 * How: one shared WebAssembly memory holds SLOTS slots (a chunk's input, its output, its records
 * and kernel calls) and a control word per slot. The caller copies chunk k into slot k mod SLOTS
 * and marks it FILLED; whichever thread claims it first (compareExchange FILLED -> RUNNING) runs
 * it and marks it DONE; the caller copies the codes out, in order, and frees the slot. The helper
 * takes the oldest filled chunk, the caller (waiting for chunk k) the newest, so they rarely meet;
 * a chunk nobody has claimed when its turn comes the caller runs itself. So the result never
 * depends on the helper (not started yet, asleep, slow or dead), only the speed does. A chunk the
 * helper holds for longer than RESCUE_MS (a thread descheduled under load, or dead) is run by the
 * caller in a spare slot, and the call finishes there on one thread; that slot of the helper's is
 * not reused until the helper lets go of it, and the next 1, 2, 4 ... 64 calls (doubling while
 * rescues follow each other) run on one thread. Both threads run the same kernels of ./simd.ts on
 * the same records, so the bytes are the one-thread bytes.
 *
 * The platform starts the helper (`QuantThreadHost`: a worker thread in tensorcast/node, a Web
 * Worker in tensorcast/web). Only the helper ever sleeps (Atomics.wait, between calls), so the
 * caller may be a browser page's main thread, which must not block.
 *
 * Browser-safe: no Node built-ins.
 */
import { describe } from "../../args.js";
import type { Storage } from "../../dtype/table.js";
import { TensorcastError } from "../../errors.js";
import { u8View } from "../fast/views.js";
import type { WasmMemory } from "../wasm/resident.js";
import type { QuantLayout } from "./layout.js";
import { chunkLength, copyCodesOut, forRuns, KERNEL_NAMES, setQuantStreamHelper, sharedInstance, tableOfRuns, uniformRun, type Job, type Kernel, type KernelName, type Loaded, type StreamHelper } from "./simd.js";

const PAGE = 65536;
/** Elements per chunk: 512 KiB of float32, so a slot's input and output stay in a core's L2. */
const CHUNK = 131072;
/** Slots the two threads share, and one more the caller alone uses after a rescue. */
const SLOTS = 4;
const RESCUE = SLOTS;
/** Slack after the input and output regions for a last group read or written past the chunk's end. */
const SLACK = 256;
const IN_BYTES = 4 * CHUNK + SLACK;
const OUT_BYTES = 4 * CHUNK + SLACK;
/**
 * Runs of one scale in a chunk, at most: runs average 16 elements or more (./simd.ts' runsFit) and
 * repeat with the layout, so a chunk holds at most CHUNK / 16 of them and one more at each end.
 */
const MAX_CALLS = CHUNK / 16 + 64;
/** A record (16 bytes) per run, then the kernel calls: source, destination, blocks, groups per block, record address. */
const TABLE_BYTES = 16 * MAX_CALLS;
const CALL_WORDS = 5;
const CALLS_BYTES = 4 * CALL_WORDS * MAX_CALLS;
const SLOT_BYTES = IN_BYTES + OUT_BYTES + TABLE_BYTES + CALLS_BYTES;
const CONTROL_AT = (SLOTS + 1) * SLOT_BYTES;
/** Words per slot in the control area: state, kernel, calls. */
const SLOT_WORDS = 4;
/** Control words after the slots': bumped on every fill (the helper sleeps on it), chunks the helper ran, a stall for tests. */
const EPOCH = (SLOTS + 1) * SLOT_WORDS;
const HELPER_CHUNKS = EPOCH + 1;
const STALL = EPOCH + 2;
const CONTROL_WORDS = STALL + 1;
/** The memory: the slots, the control words, and the kernels' own last page. */
export const PIPELINE_PAGES = Math.ceil((CONTROL_AT + 4 * CONTROL_WORDS) / PAGE) + 1;
/** Jobs below this many elements stay on the calling thread (four chunks: the pipeline's depth). */
export const PIPELINE_MIN_ELEMENTS = SLOTS * CHUNK;
/** Polls before the idle helper sleeps: about 0.2-0.5 ms, several chunks' time. */
const SPIN = 1 << 16;
/** Calls left to one thread after a rescue: doubled on each rescue in a row, up to the cap; a call without one resets it. */
const BACKOFF_MAX = 64;
/**
 * How long the caller waits for one chunk the helper holds before running it itself: a chunk is
 * 30-150 us of work, so a helper this late was descheduled (a loaded machine), and the call is
 * faster finished on one thread than waiting for a time slice.
 */
const RESCUE_MS = 2;

const FREE = 0;
const FILLED = 1;
const RUNNING = 2;
const DONE = 3;

/** How a platform starts the helper thread. */
export interface QuantHelperHost {
  /**
   * Starts a thread that calls `serveQuantPipeline(memory)`. `died` is called if it fails or exits.
   * Throws if no thread can be started.
   */
  spawn(memory: WasmMemory, died: () => void): void;
}

/** A platform's helper thread, as its useQuantizeThread switch drives it. */
export interface QuantThreadHost extends QuantHelperHost {
  /** Stops the thread `spawn` started last, if any. */
  stop(): void;
}

/**
 * The switch each platform exports as useQuantizeThread / quantizeThreadChunks (tensorcast/node
 * with a worker thread, tensorcast/web with a Web Worker): one pipeline at a time, installed in
 * ./simd.ts while on.
 */
export class QuantThreadSwitch {
  private pipeline: QuantPipeline | undefined;

  constructor(private readonly host: QuantThreadHost) {}

  use(on: unknown): void {
    if (typeof on !== "boolean") throw new TensorcastError("INVALID_VALUE", `useQuantizeThread takes true or false, got ${describe(on)}`);
    if (on) {
      if (!this.pipeline) {
        this.pipeline = new QuantPipeline(this.host);
        setQuantStreamHelper(this.pipeline);
      }
      return;
    }
    if (!this.pipeline) return;
    setQuantStreamHelper(undefined);
    this.pipeline = undefined;
    this.host.stop();
  }

  chunks(): number {
    return this.pipeline?.helperChunks() ?? 0;
  }
}

interface Shared {
  readonly l: Loaded;
  readonly control: Int32Array;
}

const slotIn = (s: number): number => s * SLOT_BYTES;
const slotOut = (s: number): number => s * SLOT_BYTES + IN_BYTES;
const slotTable = (s: number): number => s * SLOT_BYTES + IN_BYTES + OUT_BYTES;
const slotCalls = (s: number): number => s * SLOT_BYTES + IN_BYTES + OUT_BYTES + TABLE_BYTES;

/**
 * Runs the kernel calls slot s was filled for, in order (a run's last partial group writes stale
 * lanes past its end, which the next run's call overwrites), on one thread's instance. Addresses
 * in the calls are relative to their slot, so a chunk copied whole to slot `at` runs there.
 */
function runSlot(sh: Shared, s: number, at = s): void {
  const c = sh.control;
  const w = s * SLOT_WORDS;
  const kernel: Kernel = sh.l.kernels[KERNEL_NAMES[c[w + 1]]];
  const base = at * SLOT_BYTES;
  const calls = sh.l.i32;
  for (let i = 0, k = slotCalls(at) >>> 2; i < c[w + 2]; i++, k += CALL_WORDS) {
    kernel(base + calls[k], base + calls[k + 1], calls[k + 2], calls[k + 3], base + calls[k + 4]);
  }
}

function attach(memory: WasmMemory): Shared | null {
  const l = sharedInstance(memory, PIPELINE_PAGES);
  if (!l) return null;
  return { l, control: new Int32Array(l.buffer, CONTROL_AT, CONTROL_WORDS) };
}

/**
 * The helper thread's loop (never returns): claims FILLED slots, runs them, marks them DONE. Idle,
 * it spins briefly (the next chunk is usually a few microseconds away), then sleeps on EPOCH.
 * @example serveQuantPipeline(workerData.memory) // in the worker thread tensorcast/node starts
 */
export function serveQuantPipeline(memory: WasmMemory): never {
  const sh = attach(memory);
  if (!sh) throw new Error("the quantize helper could not instantiate its kernels on the shared memory");
  const c = sh.control;
  let next = 0;
  for (;;) {
    const epoch = Atomics.load(c, EPOCH);
    let ran = false;
    for (let spin = 0; spin < SPIN && !ran; spin++) {
      for (let i = 0; i < SLOTS; i++) {
        const s = (next + i) % SLOTS;
        if (Atomics.load(c, s * SLOT_WORDS) !== FILLED) continue;
        if (Atomics.compareExchange(c, s * SLOT_WORDS, FILLED, RUNNING) !== FILLED) continue;
        // Tests stall the helper here, holding a chunk, to make the caller rescue it.
        while (Atomics.load(c, STALL) !== 0) Atomics.wait(c, STALL, Atomics.load(c, STALL), 100);
        runSlot(sh, s);
        Atomics.store(c, s * SLOT_WORDS, DONE);
        Atomics.notify(c, s * SLOT_WORDS);
        Atomics.add(c, HELPER_CHUNKS, 1);
        next = s + 1;
        ran = true;
        break;
      }
    }
    // A fill after the epoch was read makes this return at once: no wake-up is lost.
    if (!ran) Atomics.wait(c, EPOCH, epoch, 100);
  }
}

const now = (): number => (globalThis as { performance?: { now(): number } }).performance?.now() ?? Date.now();

/**
 * The calling thread's side: a StreamHelper for ./simd.ts (setQuantStreamHelper). Takes every
 * job ./simd.ts streams of at least PIPELINE_MIN_ELEMENTS: per tensor (one call per chunk), runs
 * of one length of whole groups (one call, a record per run), any other runs (a call per run, as
 * the one-thread path makes them); the memory and the helper thread are made on the first one.
 */
export class QuantPipeline implements StreamHelper {
  private shared: Shared | null | undefined;
  private helperAlive = false;
  /** After rescues: calls still to be left to one thread, and how many the next rescue leaves. */
  private backoff = 0;
  private nextBackoff = 1;
  /** Jobs taken, and chunks the caller ran in the spare slot because the helper held them too long. */
  taken = 0;
  rescued = 0;

  constructor(private readonly host: QuantHelperHost) {}

  /** Chunks the helper thread has run so far (for tests: the second thread did work). */
  helperChunks(): number {
    return this.shared ? Atomics.load(this.shared.control, HELPER_CHUNKS) : 0;
  }

  /** For tests: true makes the helper hold the next chunk it claims until set false again. */
  stallHelper(on: boolean): void {
    const sh = this.ready();
    if (!sh) return;
    Atomics.store(sh.control, STALL, on ? 1 : 0);
    Atomics.notify(sh.control, STALL);
  }

  private ready(): Shared | null {
    if (this.shared === undefined) {
      this.shared = null;
      try {
        const W = (globalThis as { WebAssembly?: { Memory: new (d: { initial: number; maximum: number; shared: boolean }) => WasmMemory } }).WebAssembly;
        if (W && typeof SharedArrayBuffer === "function") {
          const memory = new W.Memory({ initial: PIPELINE_PAGES, maximum: PIPELINE_PAGES, shared: true });
          this.shared = attach(memory);
          if (this.shared) {
            this.host.spawn(memory, () => {
              this.helperAlive = false;
            });
            this.helperAlive = true;
          }
        }
      } catch {
        // No shared memory or no thread here: every job stays on the calling thread's own path.
        this.helperAlive = false;
      }
    }
    return this.shared;
  }

  /**
   * Whether every shared slot is free: DONE ones (a rescued chunk the helper finished later) are
   * freed; a RUNNING one (the helper still holds a rescued chunk) makes the job decline.
   */
  private slotsFree(c: Int32Array): boolean {
    for (let s = 0; s < SLOTS; s++) {
      const w = s * SLOT_WORDS;
      if (Atomics.compareExchange(c, w, DONE, FREE) === RUNNING) return false;
      Atomics.compareExchange(c, w, FILLED, FREE);
    }
    return true;
  }

  run(job: Job, x: Storage, y: Storage, layout: QuantLayout): boolean {
    if (layout.count < PIPELINE_MIN_ELEMENTS) return false;
    const uniform = uniformRun(layout, job.group);
    const sh = this.ready();
    if (!sh || !this.helperAlive) return false;
    if (this.backoff > 0) {
      // A loaded machine keeps the helper from a core: one thread is faster for a while.
      this.backoff--;
      return false;
    }
    if (!this.slotsFree(sh.control)) return false;
    this.taken++;
    const { l, control: c } = sh;
    const { group, inBits, outBits } = job;
    const kernelIndex = KERNEL_NAMES.indexOf(job.kernel as KernelName);
    const src = u8View(x);
    const dst = u8View(y);
    const chunk = chunkLength(uniform, CHUNK);
    const chunks = Math.ceil(layout.count / chunk);
    /** Copies chunk k into slot `at` and writes its kernel calls (and their count, in slot s's control words). */
    const load = (k: number, s: number, at: number): void => {
      const start = k * chunk;
      const n = Math.min(chunk, layout.count - start);
      l.bytes.set(src.subarray((start * inBits) / 8, Math.ceil(((start + n) * inBits) / 8)), slotIn(at));
      const calls = l.i32;
      let word = slotCalls(at) >>> 2;
      let count = 0;
      const call = (p: number, blocks: number, per: number, record: number): void => {
        calls[word] = (p * inBits) / 8;
        calls[word + 1] = IN_BYTES + (p * outBits) / 8;
        calls[word + 2] = blocks;
        calls[word + 3] = per;
        calls[word + 4] = IN_BYTES + OUT_BYTES + 16 * record;
        word += CALL_WORDS;
        count++;
      };
      if (uniform > 0) {
        tableOfRuns(l.i32, layout, job.records, start / uniform, n / uniform, slotTable(at));
        call(0, n / uniform, uniform / group, 0);
      } else {
        // A call per run (per tensor: one), each run's last partial group converting stale lanes
        // that the next run overwrites or that are never copied out.
        const table = slotTable(at) >>> 2;
        forRuns(layout, start, n, (p, length, g) => {
          if (count === MAX_CALLS) throw new Error(`quantize pipeline: more than ${MAX_CALLS} runs in a chunk`);
          l.i32.set(job.records.subarray(4 * g, 4 * g + 4), table + 4 * count);
          call(p - start, 1, Math.ceil(length / group), count);
        });
      }
      c[s * SLOT_WORDS + 1] = kernelIndex;
      c[s * SLOT_WORDS + 2] = count;
    };
    const copyOut = (k: number, at: number): void => {
      const start = k * chunk;
      copyCodesOut(dst, l.bytes.subarray(slotOut(at)), start, Math.min(chunk, layout.count - start), outBits);
    };
    /** The chunk in slot s, run here in the spare slot (the helper may still write slot s's output). */
    const rescue = (s: number): void => {
      l.bytes.copyWithin(slotIn(RESCUE), slotIn(s), slotIn(s) + IN_BYTES);
      l.bytes.copyWithin(slotTable(RESCUE), slotTable(s), slotTable(s) + TABLE_BYTES + CALLS_BYTES);
      runSlot(sh, s, RESCUE);
      this.rescued++;
    };
    let stuck = false;
    /**
     * Waits for the helper to finish slot s's chunk; false (after RESCUE_MS) if it did not. It
     * polls, never sleeps: waking a sleeping thread takes 50-250 us on these machines, more than a
     * chunk's work, and a call that slept on every chunk ran at a third of one thread's speed.
     * (A dead helper is only heard of between calls, so the deadline covers it too.)
     */
    const finished = (w: number): boolean => {
      const since = now();
      for (let spin = 1; Atomics.load(c, w) !== DONE; spin++) {
        if ((spin & 1023) === 0 && now() - since > RESCUE_MS) return false;
      }
      return true;
    };
    let filled = 0;
    /** Runs the newest unclaimed chunk after k, marking it DONE as the helper would; false if there is none. */
    const stealNewest = (k: number): boolean => {
      for (let j = filled - 1; j > k; j--) {
        const w = (j % SLOTS) * SLOT_WORDS;
        if (Atomics.load(c, w) === FILLED && Atomics.compareExchange(c, w, FILLED, RUNNING) === FILLED) {
          runSlot(sh, j % SLOTS);
          Atomics.store(c, w, DONE);
          return true;
        }
      }
      return false;
    };
    for (let k = 0; k < chunks; k++) {
      while (!stuck && filled < chunks && filled < k + SLOTS) {
        const s = filled % SLOTS;
        load(filled++, s, s);
        Atomics.store(c, s * SLOT_WORDS, FILLED);
        Atomics.add(c, EPOCH, 1);
        Atomics.notify(c, EPOCH);
      }
      if (k >= filled) {
        // After a rescue: the rest of the call on this thread, through the spare slot.
        load(k, RESCUE, RESCUE);
        runSlot(sh, RESCUE);
        copyOut(k, RESCUE);
        continue;
      }
      const s = k % SLOTS;
      const w = s * SLOT_WORDS;
      // Work from the newest chunk back while this one is unclaimed or the helper's: the helper
      // takes the oldest, so the two rarely meet on one slot, and this thread idles only when
      // every filled chunk is the helper's.
      while (Atomics.load(c, w) !== DONE && stealNewest(k)) continue;
      if (Atomics.compareExchange(c, w, FILLED, RUNNING) === FILLED) {
        runSlot(sh, s);
        copyOut(k, s);
        Atomics.store(c, w, FREE);
      } else if (finished(w)) {
        copyOut(k, s);
        Atomics.store(c, w, FREE);
      } else {
        // The slot stays the helper's (RUNNING) until it lets go; slotsFree frees it then.
        rescue(s);
        copyOut(k, RESCUE);
        stuck = true;
      }
    }
    if (stuck) {
      this.backoff = this.nextBackoff;
      this.nextBackoff = Math.min(2 * this.nextBackoff, BACKOFF_MAX);
    } else {
      this.nextBackoff = 1;
    }
    return true;
  }
}
