/**
 * The page's state in its URL: every control that differs from its default, as `#id=value&...`,
 * so a link restores what was on the screen. Only controls are kept; everything shown follows
 * from them.
 */

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

/** Text longer than this is left out of the link (a 100,000-value paste does not fit in a URL). */
export const MAX_LINK_TEXT = 2000;

const defaults = new Map<string, string>();

function read(c: Control): string {
  return c instanceof HTMLInputElement && c.type === "checkbox" ? (c.checked ? "1" : "0") : c.value;
}

function write(c: Control, v: string): boolean {
  if (c instanceof HTMLInputElement && c.type === "checkbox") {
    c.checked = v === "1";
    return true;
  }
  c.value = v;
  // A select refuses a value it has no option for (and is left empty): fall back to its default.
  return c.value === v;
}

/** The controls kept in the URL: every one with an id inside `root`. */
function controls(root: ParentNode): Control[] {
  return [...root.querySelectorAll<Control>("input[id], select[id], textarea[id]")].filter((c) => !c.dataset.noState);
}

/**
 * Remembers the defaults, then applies the URL's hash; returns the ids it set (a value a select
 * has no option for is dropped).
 * @example restoreState(document, "#values=0.3&from=float16") // ["values", "from"]
 */
export function restoreState(root: ParentNode, hash: string): string[] {
  const all = controls(root);
  for (const c of all) defaults.set(c.id, read(c));
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const set: string[] = [];
  for (const c of all) {
    const v = params.get(c.id);
    if (v === null) continue;
    if (write(c, v)) set.push(c.id);
    else write(c, defaults.get(c.id)!);
  }
  return set;
}

/** The hash for the current controls: those that differ from their defaults and fit in a link. */
export function stateHash(root: ParentNode): { hash: string; left: string[] } {
  const params = new URLSearchParams();
  const left: string[] = [];
  for (const c of controls(root)) {
    // A text box whose paste is kept out of it (paste.ts) stands for that paste: not its empty self.
    if (c.dataset.keptOut !== undefined) {
      left.push(c.id);
      continue;
    }
    const v = read(c);
    if (v === defaults.get(c.id)) continue;
    if (v.length > MAX_LINK_TEXT) left.push(c.id);
    else params.set(c.id, v);
  }
  const s = params.toString();
  return { hash: s === "" ? "" : `#${s}`, left };
}

/** Puts the controls into the address bar (without a history entry per keystroke). */
export function saveState(root: ParentNode): string[] {
  const { hash, left } = stateHash(root);
  const url = `${location.pathname}${location.search}${hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(null, "", url);
  return left;
}
