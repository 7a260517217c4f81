/**
 * general.* as gguf-py's Metadata writes them for a folder with no model card and no override:
 * the name and its parts from the folder's name (or config.json's `_name_or_path` when it is a
 * Hub id), and the size label from the parameter count.
 */

/** What gguf-py's get_model_id_components finds in a model id. */
export interface ModelIdParts {
  readonly name?: string;
  readonly organization?: string;
  readonly basename?: string;
  readonly finetune?: string;
  readonly version?: string;
  readonly sizeLabel?: string;
}

// Python's str.islower: some cased character, none of them upper case
function isLower(w: string): boolean {
  return w !== w.toUpperCase() && w === w.toLowerCase();
}

// Python's str.title: a cased character after an uncased one is upper case, after a cased one lower case
function title(w: string): string {
  let out = "";
  let prevCased = false;
  for (const ch of w) {
    const cased = ch.toLowerCase() !== ch.toUpperCase();
    out += cased ? (prevCased ? ch.toLowerCase() : ch.toUpperCase()) : ch;
    prevCased = cased;
  }
  return out;
}

/** gguf-py's Metadata.id_to_title: "tiny-llama" -> "Tiny Llama"; versions, numbers and mixed case kept. */
export function idToTitle(s: string): string {
  return s
    .trim()
    .replace(/-/g, " ")
    .split(/\s+/)
    .filter((w) => w !== "")
    .map((w) => (isLower(w) && !/^(v\d+(?:\.\d+)*|\d.*)$/.test(w) ? title(w) : w))
    .join(" ");
}

const isDecimal = (c: string): boolean => c >= "0" && c <= "9";
const isAlpha = (c: string): boolean => c.toLowerCase() !== c.toUpperCase();

/** gguf-py's Metadata.get_model_id_components: the parts of a model id such as "org/Name-7B-Instruct-v0.1". */
export function modelIdParts(modelId: string, totalParams: number): ModelIdParts {
  if (modelId.includes(" ")) return { name: modelId };
  let org: string | undefined;
  let full = modelId;
  const slash = modelId.indexOf("/");
  if (slash >= 0) {
    org = modelId.slice(0, slash);
    full = modelId.slice(slash + 1);
  }
  if (org !== undefined && org.startsWith(".")) org = undefined;
  const parts = full.split("-").filter((p) => p !== "");
  const types: Set<string>[] = parts.map(() => new Set());
  parts.forEach((p0, i) => {
    let part = p0;
    if (/^(v|iter)?\d+([.]\d+)*$/i.test(part)) types[i]!.add("version");
    else if (/^(i?q\d(_\w)*|b?fp?(16|32))$/i.test(part)) {
      types[i]!.add("type");
      parts[i] = part.toUpperCase();
    } else if (i > 0 && /^(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl)$/i.test(part)) {
      part = part.replace(/_/g, ".");
      if (isDecimal(part[part.length - 1]!)) part = part.slice(0, -2) + "." + part[part.length - 1]! + part[part.length - 2]!;
      if (part.length > 1 && isDecimal(part[part.length - 2]!) && "kmbt".includes(part[part.length - 1]!)) {
        part = part.slice(0, -1) + part[part.length - 1]!.toUpperCase();
      }
      if (totalParams !== 0) {
        const scale = " KMBT".indexOf(part[part.length - 1]!);
        const mantissa = Number(part.slice(0, -1));
        if (scale >= 0 && part.slice(0, -1).trim() !== "" && Number.isFinite(mantissa)) {
          const labelParams = mantissa * 1000 ** scale;
          if ((totalParams < 0 && labelParams < Math.floor(Math.abs(totalParams) / 8)) || (totalParams > 0 && Math.abs(labelParams - totalParams) > Math.floor((7 * totalParams) / 8))) {
            types[i]!.add("finetune");
            part = part.slice(0, -1) + part[part.length - 1]!.toLowerCase();
          }
        }
      }
      if (types[i]!.size === 0) types[i]!.add("size_label");
      parts[i] = part;
    } else if (i > 0 && /^(chat|instruct|vision|lora)$/i.test(part)) {
      if (totalParams < 0 && part.toLowerCase() === "lora") types[i]!.add("type");
      else types[i]!.add("finetune");
    }
  });
  if (parts.some((n, i) => types[i]!.has("size_label") && [...n].some(isDecimal))) {
    parts.forEach((n, i) => {
      if (types[i]!.has("size_label") && [...n].every(isAlpha)) types[i]!.delete("size_label");
    });
  }
  let atStart = true;
  parts.forEach((part, i) => {
    const t = types[i]!;
    if (atStart && ((t.size === 0 && isAlpha(part[0]!)) || t.has("version"))) t.add("basename");
    else {
      atStart = false;
      if (t.size === 0) t.add("finetune");
    }
  });
  for (let i = parts.length - 1; i >= 0; i--) {
    const t = types[i]!;
    if (t.has("basename") && t.size > 1) t.delete("basename");
    else break;
  }
  const join = (pick: (t: Set<string>) => boolean, dedupe = false): string | undefined => {
    let picked = parts.filter((_, i) => pick(types[i]!));
    if (dedupe) picked = [...new Set(picked)];
    return picked.length > 0 ? picked.join("-") : undefined;
  };
  let basename = join((t) => t.has("basename"));
  const sizeLabel = join((t) => t.has("size_label"), true);
  const finetune = join((t) => t.has("finetune"));
  const version = join((t) => t.has("version") && !t.has("basename"));
  if (sizeLabel === undefined && finetune === undefined && version === undefined) basename = undefined;
  return { name: full, organization: org, basename, finetune, version, sizeLabel };
}

// Python's round(): to nearest, ties to even
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

// Python's f"{x:.{d}f}": nearest, ties to even on the exact binary value (toFixed rounds ties up)
function fixed(x: number, digits: number): string {
  const s = x.toFixed(digits);
  const scaled = x * 10 ** digits;
  if (Number.isInteger(scaled * 2) && !Number.isInteger(scaled) && Math.abs(scaled) < 2 ** 52) {
    const even = roundHalfEven(scaled);
    return (even / 10 ** digits).toFixed(digits);
  }
  return s;
}

/** gguf-py's model_weight_count_rounded_notation with min_digits 2: 115304 -> "115K", 4.2e6 -> "4.2M". */
export function sizeLabel(count: number): string {
  let scaled: number;
  let suffix: string;
  if (count > 1e12) [scaled, suffix] = [count * 1e-12, "T"];
  else if (count > 1e9) [scaled, suffix] = [count * 1e-9, "B"];
  else if (count > 1e6) [scaled, suffix] = [count * 1e-6, "M"];
  else [scaled, suffix] = [count * 1e-3, "K"];
  const digits = Math.max(2 - String(roundHalfEven(scaled)).replace(/^0+/, "").length, 0);
  return `${fixed(scaled, digits)}${suffix}`;
}
