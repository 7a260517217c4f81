/**
 * One page in one of the three browser engines, driven the same way whatever the engine, so every
 * engine-neutral browser test is written once and run in each:
 *
 * - chromium: Debian's chromium through playwright-core (as the Chromium-only tests do);
 * - firefox: Debian's firefox-esr through puppeteer-core over WebDriver BiDi (no extra driver);
 * - webkit: WebKitGTK (Safari's engine), Debian's WebKitWebDriver spoken to directly over the W3C
 *   WebDriver HTTP protocol; it opens a real window (MiniBrowser has no headless mode), so it runs
 *   on an Xvfb display of its own.
 *
 * Results cross from the page as JSON (`evaluate` stringifies in the page and parses here), so each
 * protocol's own serialisation of values (-0, undefined, typed arrays) never matters.
 */
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { chromium, type LaunchOptions as PlaywrightLaunchOptions } from "playwright-core";
import puppeteer from "puppeteer-core";

export type EngineName = "chromium" | "firefox" | "webkit";
const ALL_ENGINES: readonly EngineName[] = ["chromium", "firefox", "webkit"];
/**
 * The engines the browser tests run in: all three, or those TENSORCAST_ENGINES lists
 * ("firefox,webkit"), to rerun one engine while working on it. Under CI always all three.
 */
export const ENGINES: readonly EngineName[] = selectedEngines(process.env.CI ? undefined : process.env.TENSORCAST_ENGINES);

function selectedEngines(list: string | undefined): readonly EngineName[] {
  if (!list) return ALL_ENGINES;
  const names = list.split(",").map((s) => s.trim()).filter((s) => s !== "");
  const unknown = names.filter((n) => !(ALL_ENGINES as readonly string[]).includes(n));
  if (unknown.length > 0) throw new Error(`TENSORCAST_ENGINES=${list}: ${unknown.join(", ")} is not one of ${ALL_ENGINES.join(", ")}`);
  return ALL_ENGINES.filter((e) => names.includes(e));
}

/** How test names and messages spell each engine. */
export const ENGINE_LABEL: Readonly<Record<EngineName, string>> = { chromium: "Chromium", firefox: "Firefox", webkit: "WebKit" };

/** Debian's chromium; CHROMIUM_PATH overrides. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
/** Debian's firefox-esr; FIREFOX_PATH overrides. */
export const FIREFOX = process.env.FIREFOX_PATH ?? "/usr/bin/firefox-esr";
/** Debian's webkit2gtk-driver; WEBKIT_WEBDRIVER_PATH overrides. */
export const WEBKIT_WEBDRIVER = process.env.WEBKIT_WEBDRIVER_PATH ?? "/usr/bin/WebKitWebDriver";
/** Debian's xvfb (the display WebKitGTK draws on); XVFB_PATH overrides. */
export const XVFB = process.env.XVFB_PATH ?? "/usr/bin/Xvfb";

/** What each engine needs on disk, and the Debian package that installs it. */
const NEEDS: Record<EngineName, [path: string, debianPackage: string][]> = {
  chromium: [[CHROMIUM, "chromium"]],
  firefox: [[FIREFOX, "firefox-esr"]],
  webkit: [[WEBKIT_WEBDRIVER, "webkit2gtk-driver"], [XVFB, "xvfb"]],
};

/**
 * Why `engine` cannot run here, or undefined when it can. Under CI (CI set) a missing engine is an
 * error, not a skip: .ci/run installs all three, so an absent one means the install broke.
 */
export function engineMissing(engine: EngineName): string | undefined {
  // .ci/run runs the browsers once, in the last Node's run; the other Node lines say where.
  const elsewhere = process.env.TENSORCAST_BROWSERS_IN;
  if (elsewhere) return `${engine}: the browser tests run in ${elsewhere}`;
  const missing = NEEDS[engine].filter(([path]) => !existsSync(path));
  if (missing.length === 0) return undefined;
  const reason = `${engine}: ${missing.map(([p]) => p).join(" and ")} missing: install Debian's ` +
    `${missing.map(([, pkg]) => pkg).join(" and ")} (apt-get install) to run the browser tests in ${engine}; .ci/run does`;
  if (process.env.CI) throw new Error(`CI=${process.env.CI} and ${reason}`);
  return reason;
}

/** A function run in the page: it gets `arg` (JSON) and its result, awaited, must be JSON-able. */
export type InPage<A, R> = (arg: A) => R | Promise<R>;

export interface EnginePage {
  readonly engine: EngineName;
  /** The browser's own name and version, for the log. */
  readonly version: string;
  /** Loads `url` in the page, a new document, and returns once its load event fired. */
  goto(url: string): Promise<void>;
  /**
   * Runs `fn` (serialised with toString: it must not close over anything) or a source expression in
   * the page and resolves to its JSON round-tripped result, awaited if a promise.
   */
  evaluate<R, A = undefined>(fn: InPage<A, R> | string, arg?: A): Promise<R>;
  /**
   * The page's uncaught errors and unhandled rejections so far, as RECORD_PAGE_ERRORS records them
   * (goto installs it once the page has loaded; pages the tests write run it first).
   */
  errors(): Promise<string[]>;
  /** Polls `fn` in the page until it returns a truthy value; rejects after `ms`. */
  waitFor<A = undefined>(fn: InPage<A, unknown> | string, arg?: A, ms?: number): Promise<void>;
  /**
   * Sets the page's viewport (its `innerWidth` x `innerHeight`, CSS pixels): playwright's and
   * puppeteer's own call; WebKit's window is resized until its inner size is the one asked for,
   * and this rejects when it cannot be (MiniBrowser stays wider than 390 px).
   */
  setViewport(width: number, height: number): Promise<void>;
  /**
   * Presses a key (a KeyboardEvent `key`: "Enter", "ArrowRight", "Tab") as a real keyboard would,
   * on the focused element: trusted events, so a button's Enter also clicks it.
   */
  press(key: string): Promise<void>;
  /** Saves a PNG of the page (the whole page where the driver can; WebKit's WebDriver: the viewport). */
  screenshot(path: string): Promise<void>;
  /**
   * Picks `path` (a file on this machine) in the page's `<input type=file>` matched by `selector`,
   * as a user would (a change event follows): playwright's setInputFiles, puppeteer's uploadFile
   * (WebDriver BiDi's input.setFiles), WebDriver's Element Send Keys with the path.
   */
  setFile(selector: string, path: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * A classic script (an expression) that records the page's uncaught errors and unhandled rejections
 * in globalThis.pageErrors. One mechanism for all three engines: classic WebDriver (WebKit) has no
 * event for them.
 */
export const RECORD_PAGE_ERRORS = `(() => {
  if (globalThis.pageErrors) return;
  const errors = globalThis.pageErrors = [];
  addEventListener("error", (e) => errors.push("page error: " + e.message));
  addEventListener("unhandledrejection", (e) => errors.push("unhandled rejection: " + (e.reason instanceof Error ? e.reason.message : String(e.reason))));
})()`;

/**
 * A classic script for test pages, run before any module: every Worker the page constructs is
 * recorded with its URL and the messages it sent, in globalThis.castWorkers. One way to see the
 * workers in every engine (only Chromium's driver lists a page's workers). What the page posts to
 * each is tallied too, by castAsync's request `kind` (src/parallel/range.ts: "shared" ranges on
 * shared memory, "copied" ones, "resident" casts within a shared arena), with how many requests
 * carried a WebAssembly memory; those memories themselves go to globalThis.castMemoriesSent (not
 * JSON: for checks in the page), so a page can tell which way castAsync really split its work.
 * Answers from a test worker that adds a `probe` field (pages/resident-probe-worker.ts) are
 * tallied by its value in `probes`.
 */
export const RECORD_WORKERS = `(() => {
  const workers = globalThis.castWorkers = [];
  const memories = globalThis.castMemoriesSent = [];
  const Native = globalThis.Worker;
  globalThis.Worker = class extends Native {
    constructor(url, options) {
      super(url, options);
      const w = { url: String(new URL(String(url), location.href)), messages: 0, posted: {}, memories: 0, probes: {} };
      const index = workers.push(w) - 1;
      this.addEventListener("message", (e) => {
        w.messages++;
        if (e.data && e.data.probe !== undefined) w.probes[e.data.probe] = (w.probes[e.data.probe] || 0) + 1;
      });
      const post = this.postMessage;
      this.postMessage = (message, transfer) => {
        const kind = String(message && message.kind);
        w.posted[kind] = (w.posted[kind] || 0) + 1;
        if (message && message.memory) {
          w.memories++;
          memories.push({ worker: index, memory: message.memory });
        }
        return post.call(this, message, transfer);
      };
    }
  };
})()`;

/** One entry of globalThis.castWorkers. */
export interface RecordedWorker {
  readonly url: string;
  /** Messages the worker sent the page. */
  readonly messages: number;
  /** Messages the page posted to it, by their `kind` ("shared", "copied", "resident"). */
  readonly posted: Readonly<Record<string, number>>;
  /** Of those, how many carried a WebAssembly memory (a shared arena's, sent with a resident cast). */
  readonly memories: number;
  /** Answers carrying a `probe` field (a test worker's), by its value. */
  readonly probes: Readonly<Record<string, number>>;
}

/** The `<script>` a test page starts with: RECORD_PAGE_ERRORS and RECORD_WORKERS. */
export const RECORDERS = `<script>${RECORD_PAGE_ERRORS};\n${RECORD_WORKERS}</script>\n`;

/** The expression that runs `fn(arg)` in the page and gives `{ v: result }` as a JSON string. */
function inPageSource(fn: InPage<never, unknown> | string, arg: unknown): string {
  const call = typeof fn === "string" ? `(${fn})` : `(${fn.toString()})(${JSON.stringify(arg ?? null)})`;
  return `(async () => JSON.stringify({ v: await ${call} }))()`;
}

function parseResult<R>(json: unknown): R {
  if (typeof json !== "string") throw new Error(`the page returned ${typeof json}, not the JSON string evaluate asked for`);
  return (JSON.parse(json) as { v: R }).v;
}

/** Turns a page driver's `evaluateSource` into the full EnginePage. */
interface PageDriver {
  goto(url: string): Promise<void>;
  evaluateSource(src: string): Promise<unknown>;
  setViewport(width: number, height: number): Promise<void>;
  press(key: string): Promise<void>;
  screenshot(path: string): Promise<void>;
  setFile(selector: string, path: string): Promise<void>;
  close(): Promise<void>;
}

function enginePage(engine: EngineName, version: string, d: PageDriver): EnginePage {
  const evaluate = async <R, A = undefined>(fn: InPage<A, R> | string, arg?: A): Promise<R> =>
    parseResult<R>(await d.evaluateSource(inPageSource(fn as InPage<never, unknown>, arg)));
  return {
    engine, version, evaluate, close: d.close, setViewport: d.setViewport, press: d.press, screenshot: d.screenshot, setFile: d.setFile,
    async goto(url) {
      await d.goto(url);
      await evaluate(RECORD_PAGE_ERRORS);
    },
    errors: () => evaluate<string[]>("globalThis.pageErrors"),
    async waitFor(fn, arg, ms = 60_000) {
      const end = Date.now() + ms;
      while (!(await evaluate(fn, arg))) {
        if (Date.now() > end) throw new Error(`${engine}: still false after ${ms} ms: ${typeof fn === "string" ? fn : fn.toString()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/**
 * Headless Debian Chromium as root, on a machine without network: no sandbox (root), and no
 * background connections (refused here, and slow to fail). `exposeGc` gives pages `gc()`, for the
 * benchmarks' collection before each timed run.
 */
export function chromiumLaunchOptions({ exposeGc = false }: { exposeGc?: boolean } = {}): PlaywrightLaunchOptions {
  return {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", ...(exposeGc ? ["--js-flags=--expose-gc"] : []),
    ],
  };
}

export interface EngineOptions {
  /** Added to the browser's environment (WebKit: the driver's, which MiniBrowser and its web processes inherit). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * What `prefers-color-scheme` answers in the page: Chromium emulates it (playwright's
   * colorScheme), Firefox is started with the preference that overrides it for content. WebKitGTK
   * over WebDriver has no way to set it: asking for it there throws (see COLOR_SCHEME_ENGINES).
   */
  readonly colorScheme?: "light" | "dark";
}

/** The engines `launch` can give a `colorScheme` to. */
export const COLOR_SCHEME_ENGINES: readonly EngineName[] = ["chromium", "firefox"];

/** Starts `engine` (see engineMissing first) with one blank page. */
export async function launch(engine: EngineName, options: EngineOptions = {}): Promise<EnginePage> {
  const env = { ...process.env, ...options.env };
  if (options.colorScheme && !COLOR_SCHEME_ENGINES.includes(engine)) throw new Error(`${engine}: no way to set prefers-color-scheme over its driver`);
  switch (engine) {
    case "chromium": return launchChromium(env, options.colorScheme);
    case "firefox": return launchFirefox(env, options.colorScheme);
    case "webkit": return launchWebKit(env);
  }
}

type Env = Record<string, string | undefined>;

async function launchChromium(env: Env, colorScheme: "light" | "dark" | undefined): Promise<EnginePage> {
  const browser = await chromium.launch({ ...chromiumLaunchOptions(), env });
  try {
    const page = await browser.newPage(colorScheme ? { colorScheme } : {});
    return enginePage("chromium", `Chromium ${browser.version()}`, {
      goto: async (url) => { await page.goto(url); },
      evaluateSource: (src) => page.evaluate(src),
      setViewport: (width, height) => page.setViewportSize({ width, height }),
      press: (key) => page.keyboard.press(key),
      screenshot: async (path) => { await page.screenshot({ path, fullPage: true }); },
      setFile: (selector, path) => page.setInputFiles(selector, path),
      close: () => browser.close(),
    });
  } catch (e) {
    await browser.close();
    throw e;
  }
}

async function launchFirefox(env: Env, colorScheme: "light" | "dark" | undefined): Promise<EnginePage> {
  // puppeteer writes a fresh profile with its preferences (no first-run pages, updates, telemetry
  // or other background connections, which this machine would refuse) and deletes it on close.
  const browser = await puppeteer.launch({
    browser: "firefox", executablePath: FIREFOX, headless: true, env,
    // Firefox's override of prefers-color-scheme for pages: 0 dark, 1 light (puppeteer over BiDi
    // has no emulateMediaFeatures in Firefox).
    ...(colorScheme ? { extraPrefsFirefox: { "layout.css.prefers-color-scheme.content-override": colorScheme === "dark" ? 0 : 1 } } : {}),
    // An evaluate (the exhaustive codec checks) can take minutes on a loaded machine; puppeteer's
    // default protocol timeout (180 s) would cut it.
    protocolTimeout: 20 * 60_000,
  });
  try {
    const page = await browser.newPage();
    return enginePage("firefox", `Firefox ${(await browser.version()).replace(/^firefox\//, "")}`, {
      goto: async (url) => { await page.goto(url, { waitUntil: "load" }); },
      evaluateSource: (src) => page.evaluate(src),
      async setViewport(width, height) {
        // puppeteer's setViewport sends emulation.setScreenOrientationOverride with the viewport,
        // a command Firefox ESR 140.12 answers "unknown command"; the tests need the viewport alone,
        // which the frame's BiDi browsing context sets.
        const context = (page.mainFrame() as unknown as { browsingContext?: { setViewport(o: object): Promise<void> } }).browsingContext;
        if (context === undefined) await page.setViewport({ width, height });
        else await context.setViewport({ viewport: { width, height }, devicePixelRatio: null });
      },
      press: (key) => page.keyboard.press(key as never),
      screenshot: async (path) => { await page.screenshot({ path: path as `${string}.png`, fullPage: true }); },
      async setFile(selector, path) {
        const input = await page.$(selector);
        if (!input) throw new Error(`Firefox: no ${selector} in the page`);
        await (input as unknown as { uploadFile(...paths: string[]): Promise<void> }).uploadFile(path);
        await input.dispose();
      },
      close: () => browser.close(),
    });
  } catch (e) {
    await browser.close();
    throw e;
  }
}

// ---- WebKitGTK over W3C WebDriver --------------------------------------------------------------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The Xvfb and WebKitWebDriver processes running; killed if this process exits first (a test timed out). */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

/** Spawns `command`, kept in `running` until it exits; `gone` settles when it exits or fails to start. */
function start(command: string, args: string[], options: SpawnOptions): { child: ChildProcess; gone: Promise<string> } {
  const child = spawn(command, args, options);
  running.add(child);
  const gone = new Promise<string>((resolve) => {
    child.once("exit", (code, signal) => resolve(`exited (${signal ?? code})`));
    child.once("error", (e) => resolve(`failed to start: ${e.message}`));
  });
  void gone.then(() => running.delete(child));
  return { child, gone };
}

/** SIGTERM, then SIGKILL if it is still there after 5 s. */
async function stop(p: { child: ChildProcess; gone: Promise<string> } | undefined): Promise<void> {
  if (!p) return;
  p.child.kill("SIGTERM");
  const timer = setTimeout(() => p.child.kill("SIGKILL"), 5000);
  await p.gone;
  clearTimeout(timer);
}

/**
 * An Xvfb display of its own: `-displayfd` makes Xvfb pick a free display number and write it,
 * so parallel runs (or a developer's own X server) never collide, as `xvfb-run -a`'s guess can.
 */
async function startXvfb(): Promise<{ xvfb: ReturnType<typeof start>; display: string }> {
  const xvfb = start(XVFB, ["-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"], { stdio: ["ignore", "ignore", "pipe", "pipe"] });
  let stderr = "";
  xvfb.child.stderr!.on("data", (b: Buffer) => { stderr = (stderr + b).slice(-2000); });
  let out = "";
  const display = await Promise.race([
    new Promise<string>((resolve) => xvfb.child.stdio[3]!.on("data", (b: Buffer) => {
      out += b;
      if (out.includes("\n")) resolve(`:${out.trim()}`);
    })),
    xvfb.gone.then((how) => { throw new Error(`Xvfb ${how} before it had a display: ${stderr}`); }),
  ]);
  return { xvfb, display };
}

/** WebDriver's code points for the named keys the tests press. */
const WEBDRIVER_KEYS: Readonly<Record<string, string>> = {
  Enter: "\uE007", Tab: "\uE004", ArrowLeft: "\uE012", ArrowUp: "\uE013", ArrowRight: "\uE014", ArrowDown: "\uE015",
  Home: "\uE011", End: "\uE010", " ": " ",
};

/** What WebKitWebDriver sometimes answers instead of a script's result (seen once in CI, under load). */
const WEBKIT_GARBLED = /Could not parse script result/;
let webkitCalls = 0;

/**
 * WebKit's evaluate: starts the page's promise and polls for its settled value, instead of one
 * Execute Script that awaits it. WebKitWebDriver once answered a script that had awaited a few
 * seconds of page work with "unknown error: Could not parse script result", losing the value; a
 * call whose answer is garbled is repeated, which is safe only because each call here is
 * idempotent: the start runs the page work once per call id, and a poll only reads. A script that
 * navigates the page gives null.
 */
async function webkitEvaluate(execute: (script: string) => Promise<unknown>, src: string): Promise<unknown> {
  const id = ++webkitCalls;
  const retrying = async (script: string): Promise<unknown> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await execute(script);
      } catch (e) {
        if (attempt >= 5 || !WEBKIT_GARBLED.test((e as Error).message)) throw e;
      }
    }
  };
  await retrying(`const calls = globalThis.__tensorcastCalls ??= {};
if (!(${id} in calls)) {
  calls[${id}] = null;
  Promise.resolve().then(() => ${src}).then((v) => { calls[${id}] = { v }; }, (e) => { calls[${id}] = { e: String(e && e.stack || e) }; });
}
return true;`);
  const end = Date.now() + 20 * 60_000;
  for (let wait = 0; ; wait = Math.min(100, wait + 10)) {
    const r = (await retrying(`const r = globalThis.__tensorcastCalls?.[${id}]; return r === undefined ? "gone" : r === null ? "" : JSON.stringify(r);`)) as string;
    // A script that navigates (a link followed in the same page) leaves no value behind: null.
    if (r === "gone") return JSON.stringify({ v: null });
    if (r !== "") {
      await execute(`delete globalThis.__tensorcastCalls[${id}]; return true;`).catch(() => undefined);
      const settled = JSON.parse(r) as { v?: unknown; e?: string };
      if (settled.e !== undefined) throw new Error(`WebKit: the script threw: ${settled.e}`);
      return settled.v;
    }
    if (Date.now() > end) throw new Error("WebKit: a script ran for over 20 minutes");
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function launchWebKit(env: Env): Promise<EnginePage> {
  let xvfb: ReturnType<typeof start> | undefined;
  let driver: ReturnType<typeof start> | undefined;
  let session: string | undefined;
  let base = "";
  const request = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const r = await fetch(base + path, {
      method, headers: { "content-type": "application/json; charset=utf-8" }, body: body === undefined ? undefined : JSON.stringify(body),
    });
    const { value } = (await r.json()) as { value: unknown };
    if (!r.ok) {
      const e = value as { error?: string; message?: string };
      throw new Error(`WebKitWebDriver ${method} ${path.replace(/^\/session\/[^/]+/, "")}: ${e.error}: ${e.message}`);
    }
    return value;
  };
  const close = async (): Promise<void> => {
    // Deleting the session closes MiniBrowser; then the driver and the display go.
    if (session) await request("DELETE", `/session/${session}`).catch(() => undefined);
    session = undefined;
    await stop(driver);
    await stop(xvfb);
  };
  try {
    const x = await startXvfb();
    xvfb = x.xvfb;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    let log = "";
    driver = start(WEBKIT_WEBDRIVER, [`--port=${port}`], { env: { ...env, DISPLAY: x.display }, stdio: ["ignore", "pipe", "pipe"] });
    for (const s of [driver.child.stdout!, driver.child.stderr!]) s.on("data", (b: Buffer) => { log = (log + b).slice(-2000); });
    let gone: string | undefined;
    void driver.gone.then((how) => { gone = how; });
    for (let ready = false, end = Date.now() + 30_000; !ready;) {
      if (gone || Date.now() > end) throw new Error(`WebKitWebDriver did not start on port ${port}${gone ? ` (${gone})` : ""}: ${log}`);
      ready = await request("GET", "/status").then((v) => (v as { ready?: boolean }).ready === true, () => false);
      if (!ready) await new Promise((r) => setTimeout(r, 100));
    }
    // The driver's default browser: MiniBrowser --automation, an ephemeral session (nothing kept on disk).
    const created = (await request("POST", "/session", { capabilities: { alwaysMatch: {} } })) as { sessionId: string; capabilities: { browserName: string; browserVersion: string } };
    session = created.sessionId;
    // Scripts may run for minutes (the exhaustive codec checks); WebDriver's default is 30 s.
    await request("POST", `/session/${session}/timeouts`, { script: 20 * 60_000, pageLoad: 120_000 });
    const s = `/session/${session}`;
    const evaluateSource = (src: string) => webkitEvaluate((script) => request("POST", `${s}/execute/sync`, { script, args: [] }), src);
    return enginePage("webkit", `WebKitGTK ${created.capabilities.browserVersion} (${created.capabilities.browserName})`, {
      goto: async (url) => { await request("POST", `${s}/url`, { url }); },
      evaluateSource,
      async setViewport(width, height) {
        // Set Window Rect sizes the outer window: add what the window's frame takes, measured.
        let inner: [number, number] = [0, 0];
        for (let attempt = 0; attempt < 4; attempt++) {
          inner = parseResult<[number, number]>(await evaluateSource(inPageSource("[innerWidth, innerHeight]", undefined)));
          if (inner[0] === width && inner[1] === height) return;
          const outer = (await request("GET", `${s}/window/rect`)) as { width: number; height: number };
          await request("POST", `${s}/window/rect`, { width: outer.width + width - inner[0], height: outer.height + height - inner[1] });
          await new Promise((r) => setTimeout(r, 200));
        }
        // MiniBrowser's window has a smallest width (its toolbar): a phone's 390 px is below it.
        throw new Error(`WebKit: the page is ${inner[0]} x ${inner[1]} px, not ${width} x ${height}: MiniBrowser's window does not get that small`);
      },
      async press(key) {
        const value = WEBDRIVER_KEYS[key] ?? key;
        await request("POST", `${s}/actions`, { actions: [{ type: "key", id: "keyboard", actions: [{ type: "keyDown", value }, { type: "keyUp", value }] }] });
      },
      async screenshot(path) {
        await writeFile(path, Buffer.from((await request("GET", `${s}/screenshot`)) as string, "base64"));
      },
      async setFile(selector, path) {
        const found = (await request("POST", `${s}/element`, { using: "css selector", value: selector })) as Record<string, string> | null;
        // W3C WebDriver names an element by this key.
        const id = found?.["element-6066-11e4-a52e-4f735466cecf"];
        if (typeof id !== "string") throw new Error(`WebKitWebDriver: Find Element ${selector} gave ${JSON.stringify(found)}`);
        await request("POST", `${s}/element/${id}/value`, { text: path });
      },
      close,
    });
  } catch (e) {
    await close();
    throw e;
  }
}
