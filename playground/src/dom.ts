/** Small DOM helpers: no framework, just elements. */

export type Attrs = Record<string, string | number | boolean | undefined>;

/** An element with attributes (false / undefined are left out, true is an empty attribute) and children. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) e.append(c);
  return e;
}

/** The element with this id, of the expected kind. */
export function byId<T extends HTMLElement>(id: string, kind: new () => T): T {
  const e = document.getElementById(id);
  if (!(e instanceof kind)) throw new Error(`#${id} is missing or not a ${kind.name}`);
  return e;
}

/** `<option>`s for a select, the first selected unless `selected` names another. */
export function fillSelect(select: HTMLSelectElement, values: readonly string[], selected?: string): void {
  select.replaceChildren(...values.map((v) => el("option", { value: v, selected: v === selected }, v)));
}
