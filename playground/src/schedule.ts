/**
 * How the page stays responsive: input schedules a view's redraw after a short pause, the redraw
 * runs in slices that give the browser a frame between them, and newer input cancels a redraw still
 * under way. `settled()` resolves once no redraw is pending or running (the browser tests await it).
 */

/** The pause after the last keystroke before a view redraws, in ms. */
export const TYPING_PAUSE = 120;
/** A slice of work runs at most this long before it yields to the browser, in ms. */
const SLICE = 12;

/** Thrown by `Job.yield` when newer input has replaced the job; the view stops quietly. */
class Cancelled extends Error {}

/** A running redraw: `yield()` between pieces of work, which returns at once while the slice has time left. */
export interface Job {
  readonly cancelled: boolean;
  yield(): Promise<void>;
}

let busy = 0;
let waiters: (() => void)[] = [];

/**
 * What the redraws since the last `sliceStats(true)` did, for the browser tests: a slice ends at the
 * first `yield()` past SLICE ms, so no slice can run longer than SLICE plus the piece that
 * crossed it. Measured with the page's own clock, this holds however loaded the machine is.
 */
export interface SliceStats {
  budget: number;
  /** Redraws started (a burst of input within the typing pause starts one). */
  jobs: number;
  slices: number;
  pieces: number;
  longestSlice: number;
  longestPiece: number;
  /** The first few times a slice gave the thread back, [from, to] (performance.now()). */
  breaks: [number, number][];
}

const NO_STATS: SliceStats = { budget: SLICE, jobs: 0, slices: 0, pieces: 0, longestSlice: 0, longestPiece: 0, breaks: [] };
let stats: SliceStats = { ...NO_STATS, breaks: [] };

/** The slices and pieces run since the last reset; `reset` starts a new count after reading. */
export function sliceStats(reset = false): SliceStats {
  const s = stats;
  if (reset) stats = { ...NO_STATS, breaks: [] };
  return s;
}

function countPiece(ms: number): void {
  stats.pieces++;
  stats.longestPiece = Math.max(stats.longestPiece, ms);
}

function countSlice(ms: number): void {
  stats.slices++;
  stats.longestSlice = Math.max(stats.longestSlice, ms);
}

function begin(): void {
  busy++;
  document.body.dataset.busy = "true";
}

function end(): void {
  busy--;
  if (busy > 0) return;
  document.body.dataset.busy = "false";
  const w = waiters;
  waiters = [];
  for (const f of w) f();
}

/** Resolves once every view has finished redrawing (at once when none is pending). */
export function settled(): Promise<void> {
  return busy === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve));
}

/** Counts `p` as work under way until it settles (the tensor box's worker). */
export function track<T>(p: Promise<T>): Promise<T> {
  begin();
  return p.finally(end);
}

/** A macrotask boundary: lets the browser handle input and paint before the next slice. */
function nextTask(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

export interface View {
  /** Redraw after the typing pause (restarted by every call). */
  later(): void;
  /** Redraw as soon as the browser has drawn a frame (a click, a select). */
  now(): void;
}

/**
 * A view whose `render` may be async and call `job.yield()` between pieces. `onError` shows a
 * failure in the view instead of leaving it stale.
 * @example const v = view(async (job) => { for (const x of xs) { await job.yield(); draw(x); } }, show);
 *          input.addEventListener("input", () => v.later());
 */
export function view(render: (job: Job) => void | Promise<void>, onError: (e: unknown) => void): View {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let current: { cancelled: boolean } | undefined;
  let pending = false;
  const start = () => {
    timer = undefined;
    if (current) current.cancelled = true;
    const token = { cancelled: false };
    current = token;
    stats.jobs++;
    let sliceStart = performance.now();
    let pieceStart = sliceStart;
    const job: Job = {
      get cancelled() { return token.cancelled; },
      async yield() {
        const now = performance.now();
        countPiece(now - pieceStart);
        if (now - sliceStart >= SLICE) {
          countSlice(now - sliceStart);
          await nextTask();
          sliceStart = performance.now();
          if (stats.breaks.length < 64) stats.breaks.push([now, sliceStart]);
        }
        pieceStart = performance.now();
        if (token.cancelled) throw new Cancelled();
      },
    };
    void (async () => {
      try {
        await render(job);
      } catch (e) {
        if (!(e instanceof Cancelled)) onError(e);
      } finally {
        const now = performance.now();
        countPiece(now - pieceStart);
        countSlice(now - sliceStart);
        if (current === token) {
          current = undefined;
          if (pending) {
            pending = false;
            end();
          }
        }
      }
    })();
  };
  const mark = () => {
    if (!pending) {
      pending = true;
      begin();
    }
  };
  return {
    later() {
      mark();
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(start, TYPING_PAUSE);
    },
    now() {
      mark();
      if (timer !== undefined) clearTimeout(timer);
      // After the next frame, so the click or choice shows at once; the fallback timer covers a
      // hidden page, which draws no frames.
      let due = true;
      const go = () => {
        if (!due) return;
        due = false;
        clearTimeout(timer);
        timer = undefined;
        start();
      };
      timer = setTimeout(go, 100);
      const mine = timer;
      requestAnimationFrame(() => setTimeout(() => { if (timer === mine) go(); }, 0));
    },
  };
}
