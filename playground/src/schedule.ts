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
    let sliceStart = performance.now();
    const job: Job = {
      get cancelled() { return token.cancelled; },
      async yield() {
        if (performance.now() - sliceStart >= SLICE) {
          await nextTask();
          sliceStart = performance.now();
        }
        if (token.cancelled) throw new Cancelled();
      },
    };
    void (async () => {
      try {
        await render(job);
      } catch (e) {
        if (!(e instanceof Cancelled)) onError(e);
      } finally {
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
