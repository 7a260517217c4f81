/**
 * Command-line parsing on top of `node:util` parseArgs, with two additions the CLI needs:
 * - negative numbers (`-1.5`, `-inf`, `-nan`) are values, not clusters of short options;
 * - every mistake is a UsageError that names what was given and what the command accepts, rather
 *   than parseArgs' generic wording.
 */
import { parseArgs } from "node:util";
import { UsageError } from "./usage.js";

export interface OptionSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
  /** What the value is, for messages: "a data type name such as float8e4m3fn". */
  readonly expects?: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** Parsed options: strings for string options, `true` for boolean ones that were given. */
export type OptionValues<S extends OptionSpecs> = {
  -readonly [K in keyof S]?: S[K]["type"] extends "string" ? string : true;
};

export interface ParsedArgs<S extends OptionSpecs> {
  readonly options: OptionValues<S>;
  readonly positionals: readonly string[];
}

// A leading dash followed by a digit, a dot or a special value is a negative number, never an option.
const NEGATIVE_VALUE = /^-(?:[0-9.]|nan$|inf$|infinity$)/i;

/** Every option of a command as `--name`, for messages. */
export function optionList(specs: OptionSpecs): string {
  return Object.entries(specs)
    .map(([name, spec]) => (spec.short ? `--${name} (-${spec.short})` : `--${name}`))
    .join(", ");
}

/**
 * Parses `args` for `command` against `specs`. The last occurrence of a repeated option wins.
 * @throws UsageError for unknown options, string options without a value and boolean options with one.
 */
export function parseCommandArgs<S extends OptionSpecs>(command: string, args: readonly string[], specs: S): ParsedArgs<S> {
  // parseArgs would read "-1.5" as the options -1, -. and -5; hide such tokens behind placeholders
  // that cannot start with a dash, and put them back afterwards (as positionals or option values).
  const hidden = new Map<string, string>();
  const masked = args.map((arg, i) => {
    if (!NEGATIVE_VALUE.test(arg)) return arg;
    const key = `\u0000${i}`;
    hidden.set(key, arg);
    return key;
  });
  const reveal = (s: string): string => hidden.get(s) ?? s;

  const nodeOptions: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const [name, spec] of Object.entries(specs)) {
    nodeOptions[name] = spec.short ? { type: spec.type, short: spec.short } : { type: spec.type };
  }
  // strict: false so that unknown options come back as tokens and get the messages below.
  const { tokens } = parseArgs({ args: masked, options: nodeOptions, strict: false, allowPositionals: true, tokens: true });

  const options: Record<string, string | true> = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(reveal(token.value));
      continue;
    }
    if (token.kind !== "option") continue;
    const spec = Object.hasOwn(specs, token.name) ? specs[token.name] : undefined;
    if (!spec) {
      throw new UsageError(
        `unknown option ${JSON.stringify(token.rawName)} for ${command}; it accepts ${optionList(specs)}`,
        command,
      );
    }
    if (spec.type === "boolean") {
      if (token.value !== undefined) {
        throw new UsageError(
          `${token.rawName} is a switch and takes no value; got ${token.rawName}=${reveal(token.value)}`,
          command,
        );
      }
      options[token.name] = true;
      continue;
    }
    const value = token.value === undefined ? undefined : reveal(token.value);
    // parseArgs hands a string option the next argument even when it is another option.
    if (value === undefined || (!token.inlineValue && value.startsWith("--"))) {
      throw new UsageError(
        `${token.rawName} needs a value${spec.expects ? `: ${spec.expects}` : ""}` +
          (value === undefined ? "" : `; got the option ${JSON.stringify(value)} instead`),
        command,
      );
    }
    options[token.name] = value;
  }
  return { options: options as OptionValues<S>, positionals };
}
