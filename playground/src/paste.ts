/**
 * Long pastes kept out of a text box: the browser lays out a textarea's whole text (about 250 ms
 * for 100,000 values, 5 s for a million) before it draws again, so a paste this long is held aside,
 * with a note saying so, and the view reads it from there.
 */
import { el } from "./dom.js";
import { MAX_LINK_TEXT } from "./state.js";

/** A paste of at least this many characters is kept out of its text box. */
export const LARGE_PASTE = 100_000;

/** The text a box stands for: what was pasted aside, or else what is in it. */
export interface GuardedBox {
  readonly text: string;
}

/**
 * Guards `box`: a long paste (or long text arriving otherwise) is kept out of it and `redraw` is
 * called; typing in the box, or the note's "clear" button, drops the kept text.
 * @example const values = guardLongPaste(byId("values", HTMLTextAreaElement), "pasted", () => view.now());
 *          readValueList(values.text);
 */
export function guardLongPaste(box: HTMLTextAreaElement, noteId: string, redraw: () => void, onKeptOut?: (text: string) => void): GuardedBox {
  let pasted: string | undefined;
  const note = el("p", { class: "note pasted", id: noteId, hidden: true });
  box.closest(".controls")!.after(note);
  const drop = () => {
    pasted = undefined;
    note.hidden = true;
    box.placeholder = "";
    // The box's own text is its state again (state.ts leaves a kept-out box out of the link).
    delete box.dataset.keptOut;
  };
  const keepOut = (text: string) => {
    pasted = text;
    box.value = "";
    box.dataset.keptOut = String(text.length);
    box.placeholder = "(the pasted values, below)";
    const clear = el("button", { type: "button" }, "clear");
    clear.addEventListener("click", () => {
      drop();
      redraw();
      box.focus();
    });
    note.replaceChildren(`${text.length.toLocaleString("en")} characters pasted: kept out of the text box so the page stays quick; typing there replaces them. ` +
      `The link to this page cannot hold them (a link keeps text up to ${MAX_LINK_TEXT.toLocaleString("en")} characters). `, clear);
    note.hidden = false;
    onKeptOut?.(text);
  };
  box.addEventListener("paste", (e) => {
    const text = e.clipboardData?.getData("text/plain") ?? "";
    if (text.length < LARGE_PASTE) return;
    e.preventDefault();
    keepOut(text);
    redraw();
  });
  // Text that arrives otherwise (dropped, or a paste the event did not carry) is moved out before
  // the browser lays it out: input events run before the next frame.
  box.addEventListener("input", () => {
    if (box.value.length >= LARGE_PASTE) keepOut(box.value);
    else if (pasted !== undefined) drop();
  });
  return { get text() { return pasted ?? box.value; } };
}
