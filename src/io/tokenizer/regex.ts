/**
 * The Oniguruma regexes of tokenizer.json (Split patterns, Replace patterns) as JavaScript
 * regexes with the `u` flag. What differs and is rewritten:
 * - `(?i:...)` scoped case folding, which JS engines before regexp modifiers lack: every ASCII
 *   letter inside the group becomes a two-case class (`s` -> `[sS]`);
 * - `\s` and `\S`: Oniguruma's are Unicode White_Space (U+0085 in, U+FEFF out), JS's are not;
 * - `\d`: Unicode decimal digits in Oniguruma's UTF-8 syntax, ASCII in JS;
 * - `\p{Han}` and the like: a script in Oniguruma, `\p{Script=Han}` in JS.
 * Anything JS cannot say (possessive quantifiers, atomic groups, `\h`, `\A`) is refused rather
 * than guessed.
 */
import { TensorcastError } from "../../errors.js";

/** Unicode White_Space, as a class body. */
const WHITE_SPACE = "\\t-\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000";
const GENERAL_CATEGORIES = new Set([
  "L", "Lu", "Ll", "Lt", "Lm", "Lo", "LC", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
  "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
  "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Cs", "Co", "Cn",
]);

function refuse(src: string, what: string): never {
  throw new TensorcastError("UNSUPPORTED_TYPE", `tokenizer regex ${JSON.stringify(src)}: ${what} has no JavaScript form here`);
}

function bothCases(c: string): string | undefined {
  const lo = c.toLowerCase();
  const up = c.toUpperCase();
  return /^[a-zA-Z]$/.test(c) && lo !== up ? lo + up : undefined;
}

/** The JavaScript source of an Oniguruma regex (compile it with the `u` flag, plus `g` to scan). */
export function onigurumaToJs(src: string): string {
  let out = "";
  let inClass = false;
  // one entry per open group: whether case folding is on inside it
  const groups: boolean[] = [];
  const folding = (): boolean => groups.length > 0 && groups[groups.length - 1] === true;
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === "\\") {
      const n = src[i + 1];
      if (n === undefined) refuse(src, "a trailing backslash");
      i++;
      if (n === "s") out += inClass ? WHITE_SPACE : `[${WHITE_SPACE}]`;
      else if (n === "S") {
        if (inClass) refuse(src, "\\S inside a class");
        out += `[^${WHITE_SPACE}]`;
      } else if (n === "d") out += "\\p{Nd}";
      else if (n === "D") {
        if (inClass) refuse(src, "\\D inside a class");
        out += "\\P{Nd}";
      } else if (n === "p" || n === "P") {
        const m = /^\{(\^?)([A-Za-z_=]+)\}/.exec(src.slice(i + 1));
        if (m === null) refuse(src, `\\${n} without {Name}`);
        const negate = (n === "P") !== (m[1] === "^");
        const name = m[2]!;
        const prop = GENERAL_CATEGORIES.has(name) || name.includes("=") ? name : `Script=${name}`;
        out += `\\${negate ? "P" : "p"}{${prop}}`;
        i += m[0].length;
      } else if ("hHAzZGKRX".includes(n)) refuse(src, `\\${n}`);
      else if (/[a-zA-Z0-9]/.test(n)) out += `\\${n}`;
      // Oniguruma lets any punctuation be escaped; JS's u flag only syntax characters
      else out += /[\^$\\.*+?()[\]{}|/]/.test(n) || (inClass && n === "-") ? `\\${n}` : n;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      if (c === "[" ) refuse(src, "a nested class");
      const both = folding() && c !== "]" ? bothCases(c) : undefined;
      out += both ?? c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      if (src[i + 1] === "^") {
        out += "^";
        i++;
      }
      // a `]` first in a class is a literal in Oniguruma
      if (src[i + 1] === "]") {
        out += "\\]";
        i++;
      }
      continue;
    }
    if (c === "(") {
      if (src.startsWith("(?i:", i)) {
        groups.push(true);
        out += "(?:";
        i += 3;
      } else if (src.startsWith("(?>", i)) refuse(src, "an atomic group");
      else if (src[i + 1] === "?" && /^\(\?[imx-]+[:)]/.test(src.slice(i))) refuse(src, "an inline option other than (?i:");
      else {
        groups.push(folding());
        out += c;
      }
      continue;
    }
    if (c === ")") {
      groups.pop();
      out += c;
      continue;
    }
    if ((c === "+" || c === "*" || c === "?" || c === "}") && src[i + 1] === "+") refuse(src, "a possessive quantifier");
    const both = folding() ? bothCases(c) : undefined;
    out += both === undefined ? c : `[${both}]`;
  }
  return out;
}

/** A global, Unicode RegExp for an Oniguruma pattern. */
export function onigurumaRegExp(src: string): RegExp {
  const js = onigurumaToJs(src);
  try {
    return new RegExp(js, "gu");
  } catch (e) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tokenizer regex ${JSON.stringify(src)} (as JavaScript ${JSON.stringify(js)}): ${(e as Error).message}`);
  }
}

/** A global RegExp matching `s` literally. */
export function literalRegExp(s: string): RegExp {
  return new RegExp(s.replace(/[\^$\\.*+?()[\]{}|/-]/g, "\\$&"), "gu");
}
