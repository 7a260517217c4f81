/**
 * What the playground's browser tests share: setting its controls in the page, and a page of the
 * built playground in one engine, served on a free port.
 */
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { engineMissing, launch, type EngineName, type EngineOptions, type EnginePage } from "./engines.js";
import { playgroundScript, playgroundSite } from "./support.js";

/**
 * Runs in the page (pass it to `evaluate`): sets each control (a boolean: checked) and fires its
 * input event (an InputEvent of `inputType` when given, as a paste is), then waits for the redraws.
 */
export function setControls(arg: { controls: Record<string, string | boolean>; inputType?: string }): Promise<void> {
  // The page's globals: the tests have no DOM types.
  const g = globalThis as any;
  for (const [selector, value] of Object.entries(arg.controls)) {
    const e = g.document.querySelector(selector);
    if (!e) throw new Error(`no ${selector}`);
    if (typeof value === "boolean") e.checked = value;
    else if ((e.value = value) !== value) throw new Error(`${selector} does not take ${JSON.stringify(value)}`);
    e.dispatchEvent(arg.inputType ? new g.InputEvent("input", { bubbles: true, inputType: arg.inputType }) : new g.Event("input", { bubbles: true }));
  }
  return g.playground.settled();
}

/**
 * The playground built into test-output/`folder`, served on a free port and opened by `body` in
 * `engine`; the page may have no uncaught error. A missing engine skips (under CI engineMissing throws).
 */
export async function withPlaygroundPage(t: TestContext, engine: EngineName, folder: string, options: EngineOptions,
  body: (page: EnginePage, url: string) => Promise<void>): Promise<void> {
  const missing = engineMissing(engine);
  if (missing) {
    t.skip(missing);
    return;
  }
  const script = await playgroundScript();
  const { server, url } = await script.servePlayground({ dir: (await playgroundSite(folder)).out, port: 0 });
  const page = await launch(engine, options);
  try {
    t.diagnostic(page.version);
    await body(page, url);
    assert.deepEqual(await page.errors(), [], "the page's errors");
  } finally {
    await page.close();
    server.close();
  }
}
