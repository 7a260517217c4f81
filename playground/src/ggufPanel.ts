/**
 * The "A GGUF model, quantized here" panel: a .gguf file picked in the page is quantized to one of
 * llama-quantize's presets by the core's job (src/io/gguf/quantize-job.ts, the one `tensorcast
 * quantize IN.gguf --mode PRESET -o OUT.gguf` runs, so the output's bytes are the CLI's) in a Web
 * Worker (ggufWorker.ts), nothing uploaded. The output is written as it is made to a file the user
 * picks (showSaveFilePicker, where the browser has it) or gathered into Blob parts for a download.
 */
import { byId, el } from "./dom.js";
import { table } from "./filePanel.js";
import type { GgufJobMessage, GgufJobRequest, GgufJobTensor, GgufWorkerRequest } from "./ggufMessages.js";
import { track } from "./schedule.js";

/** The tensor table lists at most this many rows. */
const MAX_ROWS = 5000;

/** Where the output goes: a file the user picked, written as the job goes, or Blob parts for a download. */
interface Output {
  write(bytes: Uint8Array): Promise<void>;
  /** Called once every byte is written; a download's link, or undefined. */
  finish(name: string): Promise<string | undefined>;
  abort(): Promise<void>;
}

/** What a FileSystemWritableFileStream offers (TypeScript's DOM library may not declare showSaveFilePicker). */
interface Writable {
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
  abort(): Promise<void>;
}
type SavePicker = (options: { suggestedName: string; types: { description: string; accept: Record<string, string[]> }[] }) => Promise<{ createWritable(): Promise<Writable> }>;

export const picker = (): SavePicker | undefined => (globalThis as unknown as { showSaveFilePicker?: SavePicker }).showSaveFilePicker;

/** The job under way in each panel (by its id prefix): `stop` ends it as failed with the error given. */
const running = new Map<string, { stop(e: unknown): void; readonly noun: string }>();
const downloadUrls = new Map<string, string>();

function fileOutput(w: Writable): Output {
  return {
    write: (bytes) => w.write(bytes),
    finish: async () => {
      await w.close();
      return undefined;
    },
    abort: () => w.abort().catch(() => undefined),
  };
}

function blobOutput(): Output {
  // A Blob per piece: the browser may keep them out of the page's memory (on disk) until the download.
  let parts: Blob[] = [];
  return {
    write: async (bytes) => {
      parts.push(new Blob([bytes as Uint8Array<ArrayBuffer>]));
    },
    finish: async () => {
      const url = URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" }));
      parts = [];
      return url;
    },
    abort: async () => {
      parts = [];
    },
  };
}

function status(p: string, text: string): void {
  byId(`${p}-status`, HTMLParagraphElement).textContent = text;
}

/** Shows `text` on the panel's error line. */
export function showError(p: string, text: string): void {
  const line = byId(`${p}-error`, HTMLParagraphElement);
  line.textContent = text;
  line.hidden = false;
}

function setRunning(j: JobSpec, on: boolean): void {
  byId(`${j.p}-run`, HTMLButtonElement).disabled = on;
  byId(`${j.p}-cancel`, HTMLButtonElement).disabled = !on;
  if (on) byId(j.section, HTMLElement).dataset.state = "running";
}

function showPlan(p: string, file: string, preset: string, size: number, tensors: readonly GgufJobTensor[]): void {
  const changed = tensors.filter((t) => t.from !== t.to).length;
  const fallbacks = tensors.filter((t) => t.fallbackFrom).length;
  byId(`${p}-summary`, HTMLParagraphElement).textContent = `${file} as ${preset}: ${tensors.length.toLocaleString("en")} tensors, ` +
    `${changed.toLocaleString("en")} of them quantized${fallbacks > 0 ? ` (${fallbacks.toLocaleString("en")} fell back to another type: their rows are not whole blocks)` : ""}, ` +
    `${size.toLocaleString("en")} bytes out.`;
  const rows = tensors.slice(0, MAX_ROWS).map((t) => [t.name, t.from, t.to, t.fallbackFrom ?? ""]);
  byId(`${p}-tensors`, HTMLDivElement).replaceChildren(table(`the tensors of ${file} as ${preset}`, ["name", "from", "to", "fell back from"], rows, `${p}-tensor-table`),
    ...(tensors.length > MAX_ROWS ? [el("p", { class: "note" }, `The first ${MAX_ROWS.toLocaleString("en")} of ${tensors.length.toLocaleString("en")} tensors.`)] : []));
}

/** The output's name: the input's, with the preset. */
function outputName(file: string, preset: string): string {
  return `${file.replace(/\.gguf$/i, "")}-${preset.toUpperCase()}.gguf`;
}

/** A job of one of the two panels: the ids' prefix, its section, what it reads, writes and says. */
export interface JobSpec {
  /** The prefix of the panel's element ids: "gq" (a GGUF model), "hf" (a Hugging Face folder). */
  readonly p: string;
  readonly section: string;
  /** The input as the page names it: a file's name, a folder's. */
  readonly input: string;
  /** The output's suggested name. */
  readonly name: string;
  /** "Quantizing", "Converting". */
  readonly verb: string;
  /** What the job is to the cancel message: "quantization", "conversion". */
  readonly noun: string;
  /** What it is made into, until the plan says: a preset, an outtype. */
  readonly target: string;
  readonly request: GgufWorkerRequest;
}

/** Clears what the panel showed of its last job. */
export function clearPanel(p: string): void {
  byId(`${p}-error`, HTMLParagraphElement).hidden = true;
  byId(`${p}-download`, HTMLParagraphElement).replaceChildren();
  const url = downloadUrls.get(p);
  if (url) URL.revokeObjectURL(url);
  downloadUrls.delete(p);
  byId(`${p}-tensors`, HTMLDivElement).replaceChildren();
  byId(`${p}-summary`, HTMLParagraphElement).textContent = "";
}

/** One job: the output chosen, the worker started, its chunks written in order, its outcome shown. */
export async function runJob(j: JobSpec): Promise<void> {
  const { p, name } = j;
  const section = byId(j.section, HTMLElement);
  clearPanel(p);
  const link = byId(`${p}-download`, HTMLParagraphElement);
  let output: Output;
  const save = picker();
  if (byId(`${p}-save`, HTMLSelectElement).value === "picker" && save) {
    try {
      // Asked first, while the click still counts as the user's gesture.
      const handle = await save({ suggestedName: name, types: [{ description: "GGUF model", accept: { "application/octet-stream": [".gguf"] } }] });
      output = fileOutput(await handle.createWritable());
    } catch (e) {
      if (e instanceof DOMException && e.name === "AbortError") {
        status(p, "No file picked: nothing was written.");
        section.dataset.state = "";
        return;
      }
      // A picker refused (no user gesture left, a policy): the download way still works.
      showError(p, `The browser refused its save picker (${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}); choose "a download" to save the output instead.`);
      section.dataset.state = "error";
      return;
    }
  } else output = blobOutput();
  const progress = byId(`${p}-progress`, HTMLProgressElement);
  progress.value = 0;
  const worker = new Worker(new URL("./gguf-worker.js", import.meta.url), { type: "module" });
  setRunning(j, true);
  status(p, `${j.verb} ${j.input} to ${j.target}\u2026`);
  let written = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      running.set(p, { stop: reject, noun: j.noun });
      // One message at a time: a chunk is written before anything after it is handled.
      let queue = Promise.resolve();
      worker.onerror = (e) => reject(new Error(`the worker failed: ${e.message}`));
      worker.onmessage = (e: MessageEvent<GgufJobMessage>) => {
        const m = e.data;
        queue = queue.then(async () => {
          switch (m.kind) {
            case "plan":
              showPlan(p, j.input, m.preset, m.size, m.tensors);
              section.dataset.bandWorkers = String(m.bandWorkers);
              status(p, `${j.verb} ${j.input} to ${m.preset} (${m.bandWorkers > 0 ? `on ${m.bandWorkers} band workers` : "in one worker"})\u2026`);
              return;
            case "chunk":
              if (m.position !== written) throw new Error(`the worker sent bytes for ${m.position}, after ${written}`);
              await output.write(m.bytes);
              written += m.bytes.length;
              worker.postMessage("written");
              return;
            case "progress":
              progress.value = m.done / m.total;
              return;
            case "done": {
              if (m.size !== written) throw new Error(`the job wrote ${written} of ${m.size} bytes`);
              const url = await output.finish(name);
              progress.value = 1;
              if (url) {
                downloadUrls.set(p, url);
                link.replaceChildren(el("a", { href: url, download: name, id: `${p}-download-link` }, `Download ${name}`), ` (${written.toLocaleString("en")} bytes)`);
                status(p, `${name}: ${written.toLocaleString("en")} bytes, ready to download.`);
              } else status(p, `${name}: ${written.toLocaleString("en")} bytes written.`);
              resolve();
              return;
            }
            case "error":
              reject(Object.assign(new Error(m.message), { shown: m.code ? `${m.name} ${m.code}: ${m.message}` : `${m.name}: ${m.message}` }));
              return;
          }
        }).catch(reject);
      };
      worker.postMessage(j.request);
    });
    section.dataset.state = "done";
  } catch (e) {
    await output.abort();
    progress.value = 0;
    status(p, "");
    const shown = (e as { shown?: unknown }).shown;
    showError(p, typeof shown === "string" ? shown : e instanceof Error ? `the page failed: ${e.message}` : String(e));
    section.dataset.state = "error";
  } finally {
    worker.terminate();
    running.delete(p);
    setRunning(j, false);
  }
}

/** The GGUF panel's job: the picked model, the preset, the importance matrix. */
function quantize(): Promise<void> {
  const file = byId("gq-file", HTMLInputElement).files?.[0];
  if (!file) {
    byId("gq-error", HTMLParagraphElement).hidden = true;
    showError("gq", "Pick a .gguf model first.");
    byId("gguf-quantize", HTMLElement).dataset.state = "error";
    return Promise.resolve();
  }
  const preset = byId("gq-preset", HTMLInputElement).value.trim();
  const imatrix = byId("gq-imatrix", HTMLInputElement).files?.[0];
  const request: GgufJobRequest = { file, preset, allowRequantize: byId("gq-requantize", HTMLInputElement).checked, ...(imatrix ? { imatrix } : {}) };
  return runJob({ p: "gq", section: "gguf-quantize", input: file.name, name: outputName(file.name, preset), verb: "Quantizing", noun: "quantization", target: preset, request });
}

/** Stops the panel's job under way: its worker ended, its output discarded (a picked file is left as it was). */
export function cancel(p: string): void {
  const job = running.get(p);
  job?.stop(Object.assign(new Error("cancelled"), { shown: `The ${job.noun} was cancelled: nothing was kept.` }));
}

let presets: Promise<void> | undefined;

/** The preset list (both panels'), from gguf-job.js, loaded the first time a panel is used. */
export function loadPresets(): void {
  presets ??= import("tensorcast-gguf-job").then((m) => {
    byId("gq-presets", HTMLDataListElement).replaceChildren(...m.LLAMA_PRESETS.map((p) => el("option", { value: p.name })));
  }, () => {
    presets = undefined;
  });
}

/** Wires the panel: the file, the preset, where the output goes, the run and cancel buttons. */
export function wireGgufPanel(): void {
  const save = byId("gq-save", HTMLSelectElement);
  if (!picker()) {
    const option = save.querySelector<HTMLOptionElement>("option[value=picker]");
    if (option) option.disabled = true;
    save.value = "download";
  }
  byId("gq-preset", HTMLInputElement).addEventListener("focus", loadPresets);
  byId("gq-file", HTMLInputElement).addEventListener("change", loadPresets);
  byId("gq-run", HTMLButtonElement).addEventListener("click", () => void track(quantize()));
  byId("gq-cancel", HTMLButtonElement).addEventListener("click", () => cancel("gq"));
}
