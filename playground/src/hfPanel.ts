/**
 * The "A Hugging Face model folder, made a GGUF here" panel: a model folder picked in the page
 * (`<input type=file webkitdirectory>`, or showDirectoryPicker where the browser has it) becomes a
 * GGUF at one of convert_hf_to_gguf's outtypes or a llama-quantize preset, by the core's folder job
 * (src/io/hf-gguf/folder.ts, the one `tensorcast convert DIR --to T` and `tensorcast quantize DIR
 * --mode PRESET` run, so the bytes are the CLI's) in the GGUF panel's Web Worker, nothing uploaded.
 * The output goes out as the GGUF panel's does (ggufPanel.ts's runJob).
 */
import { byId } from "./dom.js";
import { cancel, clearPanel, loadPresets, picker, runJob, showError } from "./ggufPanel.js";
import type { HfJobRequest } from "./ggufMessages.js";
import { track } from "./schedule.js";

/** The folder picked: its name, its plain files and its subfolders' names. */
interface PickedFolder {
  readonly folderName: string;
  readonly files: readonly { readonly name: string; readonly file: File }[];
  readonly subfolders: readonly string[];
}

let picked: PickedFolder | undefined;

/**
 * The folder an `<input webkitdirectory>` gives: each File's webkitRelativePath is
 * "FOLDER/NAME" (a file of the folder) or "FOLDER/SUB/..." (inside a subfolder, which is only listed).
 */
function fromInput(list: FileList): PickedFolder | undefined {
  const files: { name: string; file: File }[] = [];
  const subfolders = new Set<string>();
  let folderName: string | undefined;
  for (const file of Array.from(list)) {
    const parts = (file.webkitRelativePath || file.name).split("/");
    if (parts.length === 1) files.push({ name: parts[0]!, file });
    else {
      folderName ??= parts[0];
      if (parts.length === 2) files.push({ name: parts[1]!, file });
      else subfolders.add(parts[1]!);
    }
  }
  if (files.length === 0 && subfolders.size === 0) return undefined;
  return { folderName: folderName ?? "model", files, subfolders: [...subfolders].sort() };
}

/** What showDirectoryPicker offers (TypeScript's DOM library may not declare it). */
interface DirectoryHandle {
  readonly name: string;
  entries(): AsyncIterable<[string, { readonly kind: "file" | "directory"; getFile?(): Promise<File> }]>;
}
type DirectoryPicker = (options?: { mode?: "read" }) => Promise<DirectoryHandle>;
const directoryPicker = (): DirectoryPicker | undefined => (globalThis as unknown as { showDirectoryPicker?: DirectoryPicker }).showDirectoryPicker;

async function fromHandle(handle: DirectoryHandle): Promise<PickedFolder> {
  const files: { name: string; file: File }[] = [];
  const subfolders: string[] = [];
  for await (const [name, entry] of handle.entries()) {
    if (entry.kind === "file" && entry.getFile) files.push({ name, file: await entry.getFile() });
    else subfolders.push(name);
  }
  return { folderName: handle.name, files, subfolders: subfolders.sort() };
}

function showPicked(): void {
  byId("hf-picked", HTMLParagraphElement).textContent = picked
    ? `${picked.folderName}/: ${picked.files.length.toLocaleString("en")} file${picked.files.length === 1 ? "" : "s"}${picked.subfolders.length > 0 ? ` (and ${picked.subfolders.length} subfolder${picked.subfolders.length === 1 ? "" : "s"}, not read)` : ""}.`
    : "";
}

/** The output's name: the folder's, with the outtype or the preset. */
function outputName(folder: string, target: string): string {
  return `${folder}-${target.toUpperCase()}.gguf`;
}

const OUTTYPE_LABEL: Readonly<Record<string, string>> = { float32: "f32", float16: "f16", bfloat16: "bf16", q8_0: "q8_0", auto: "auto" };

function make(): Promise<void> {
  if (!picked) {
    clearPanel("hf");
    showError("hf", "Pick a model folder first.");
    byId("hf-gguf", HTMLElement).dataset.state = "error";
    return Promise.resolve();
  }
  const mode = byId("hf-mode", HTMLSelectElement).value === "quantize" ? "quantize" : "convert";
  const outtype = byId("hf-outtype", HTMLSelectElement).value;
  const preset = byId("hf-preset", HTMLInputElement).value.trim();
  const target = mode === "convert" ? OUTTYPE_LABEL[outtype] ?? outtype : preset;
  const request: HfJobRequest = { kind: "hf", folderName: picked.folderName, files: picked.files, subfolders: picked.subfolders, mode, outtype, preset };
  return runJob({
    p: "hf", section: "hf-gguf", input: picked.folderName, name: outputName(picked.folderName, target),
    verb: mode === "convert" ? "Converting" : "Quantizing", noun: mode === "convert" ? "conversion" : "quantization", target, request,
  });
}

function syncMode(): void {
  const quantize = byId("hf-mode", HTMLSelectElement).value === "quantize";
  byId("hf-outtype", HTMLSelectElement).disabled = quantize;
  byId("hf-preset", HTMLInputElement).disabled = !quantize;
}

/** Wires the panel: the folder (input or directory picker), what to make, where it goes, run and cancel. */
export function wireHfPanel(): void {
  const save = byId("hf-save", HTMLSelectElement);
  if (!picker()) {
    const option = save.querySelector<HTMLOptionElement>("option[value=picker]");
    if (option) option.disabled = true;
    save.value = "download";
  }
  const input = byId("hf-folder", HTMLInputElement);
  input.addEventListener("change", () => {
    picked = input.files ? fromInput(input.files) : undefined;
    showPicked();
    loadPresets();
  });
  const pick = byId("hf-pick", HTMLButtonElement);
  if (directoryPicker()) {
    pick.hidden = false;
    pick.addEventListener("click", () => void track((async () => {
      try {
        // Looked up at the click: the engine's own, or one a test put in its place.
        picked = await fromHandle(await directoryPicker()!({ mode: "read" }));
        input.value = "";
        showPicked();
        loadPresets();
      } catch (e) {
        if (e instanceof DOMException && e.name === "AbortError") return;
        showError("hf", `The browser refused its folder picker (${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}); pick the folder with the file input instead.`);
      }
    })()));
  }
  const mode = byId("hf-mode", HTMLSelectElement);
  mode.addEventListener("change", syncMode);
  mode.addEventListener("input", syncMode);
  syncMode();
  byId("hf-preset", HTMLInputElement).addEventListener("focus", loadPresets);
  byId("hf-run", HTMLButtonElement).addEventListener("click", () => void track(make()));
  byId("hf-cancel", HTMLButtonElement).addEventListener("click", () => cancel("hf"));
}
