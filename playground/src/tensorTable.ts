/**
 * A tensor as a table that stays small whatever its size: at most COLUMNS elements across (a long
 * last dimension wraps onto further rows) and PAGE elements at a time, with buttons for the other
 * pages. Only the shown elements are read and spelled.
 */
import { elementCode, formatHex, Tensor } from "tensorcast";
import { el } from "./dom.js";
import { formatElement } from "./format.js";

/** Elements across one row of the table. */
export const COLUMNS = 16;
/** Elements on one page: 256 cells, so two tables stay far below a few thousand cells. */
export const PAGE = 256;

/** The elements `from` .. `to` - 1 of `x` as a tensor of their own (cheap: a view of the bytes where possible). */
function slice(x: Tensor, from: number, to: number): Tensor {
  const t = x.dtype;
  if (t.kind === "string") return Tensor.fromValues((x.toValues() as string[]).slice(from, to), t, [to - from]);
  // Pages start at multiples of 256 elements, so a packed slice starts on a whole byte.
  const bytes = x.bytes();
  const start = (from * t.bits) / 8;
  const end = Math.ceil((to * t.bits) / 8);
  return Tensor.fromBytes(bytes.subarray(start, end), t, [to - from]);
}

/** The multi-index of flat element `i` in `shape`. */
function indexOf(i: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  for (let k = shape.length - 1; k >= 0; k--) {
    out[k] = i % shape[k];
    i = Math.floor(i / shape[k]);
  }
  return out;
}

/**
 * Page `page` of `x` as a table: the last dimension across (wrapped at COLUMNS), every index of
 * the others down; `onPage` is called with the page a button asks for.
 */
export function tensorTable(x: Tensor, id: string, page: number, onPage: (page: number) => void): HTMLElement {
  const rank = x.shape.length;
  const pages = Math.max(1, Math.ceil(x.size / PAGE));
  const p = Math.min(Math.max(0, page), pages - 1);
  const wrap = el("div", { class: "tensor", id, "data-dtype": x.dtype.name, "data-shape": JSON.stringify(x.shape), "data-page": p });
  wrap.append(el("div", { class: "tensor-caption" }, `${x.dtype.name} [${x.shape.join(", ")}] · ${x.size.toLocaleString("en")} element${x.size === 1 ? "" : "s"}`));
  if (x.size === 0) {
    wrap.append(el("div", { class: "empty" }, "(no elements)"));
    return wrap;
  }
  const from = p * PAGE;
  const to = Math.min(x.size, from + PAGE);
  const part = slice(x, from, to);
  const values = part.toValues() as unknown[];
  const showCodes = x.dtype.kind !== "string" && x.dtype.kind !== "complex";
  const last = rank === 0 ? 1 : x.shape[rank - 1];
  const across = Math.min(COLUMNS, last);
  const wraps = last > COLUMNS;
  const table = el("table", { class: "elements" });
  const head = el("tr", {}, el("th", { scope: "col" }, rank <= 1 ? "index" : `[${x.shape.slice(0, -1).map(() => "i").join(", ")}, ·]`));
  for (let j = 0; j < across; j++) head.append(el("th", { scope: "col" }, rank === 0 ? "scalar" : wraps ? `+${j}` : String(j)));
  table.append(head);
  let tr: HTMLTableRowElement | undefined;
  for (let i = from; i < to; i++) {
    const j = rank === 0 ? 0 : i % last;
    if (!tr || j % across === 0) {
      const index = rank === 0 ? [] : indexOf(i, x.shape);
      const label = rank === 0 ? "" : wraps ? `[${index.join(", ")}]` : rank === 1 ? "" : `[${index.slice(0, -1).join(", ")}]`;
      tr = el("tr", {}, el("th", { scope: "row" }, label));
      // A wrapped row that starts mid-way (a page boundary) is padded so columns line up.
      for (let k = 0; k < j % across; k++) tr.append(el("td", { class: "pad" }));
      table.append(tr);
    }
    const text = formatElement(values[i - from]);
    const code = showCodes ? formatHex(elementCode(part, i - from), x.dtype) : "";
    tr.append(el("td", { "data-index": i, "data-value": text, "data-code": code || undefined },
      el("span", { class: "v" }, text), ...(code ? [el("span", { class: "c" }, code)] : [])));
  }
  const box = el("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": `${id === "t-input-table" ? "input" : id === "t-back-table" ? "dequantized back" : "output"} elements ${from + 1} to ${to}` }, table);
  wrap.append(box);
  if (pages > 1) wrap.append(pager(p, pages, `elements ${(from + 1).toLocaleString("en")}–${to.toLocaleString("en")} of ${x.size.toLocaleString("en")}`, onPage));
  return wrap;
}

/**
 * Previous / next buttons, where we are, and (past two pages) a page number to jump to: a paste of
 * 100,000 values is 12,500 pages of eight, too many to step through.
 */
export function pager(page: number, pages: number, where: string, onPage: (page: number) => void): HTMLElement {
  const prev = el("button", { type: "button", class: "prev", disabled: page === 0 }, "‹ previous");
  const next = el("button", { type: "button", class: "next", disabled: page >= pages - 1 }, "next ›");
  prev.addEventListener("click", () => onPage(page - 1));
  next.addEventListener("click", () => onPage(page + 1));
  const box = el("div", { class: "pager" }, prev, el("span", { class: "where" }, `${where} (page ${page + 1} of ${pages.toLocaleString("en")})`), next);
  if (pages > 2) {
    const jump = el("input", { type: "number", class: "jump", min: 1, max: pages, step: 1, value: page + 1, inputmode: "numeric", "aria-label": `go to page (1 to ${pages})` });
    const go = () => {
      const n = Math.round(Number(jump.value));
      if (Number.isFinite(n) && n >= 1 && n <= pages && n !== page + 1) onPage(n - 1);
    };
    // On Enter or leaving the field, not on every keystroke (typing 5000 would visit 5, 50 and 500).
    jump.addEventListener("change", go);
    jump.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    box.append(el("label", { class: "jump-label" }, "go to page ", jump));
  }
  return box;
}
