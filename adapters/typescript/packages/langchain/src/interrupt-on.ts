/**
 * LangChain.js `humanInTheLoopMiddleware({ interruptOn })` as crossgate policy rules, read the way the
 * Python side reads `interrupt_on` (`crossgate.policy.langchain.import_interrupt_on`): the same rule
 * names, verdicts, reasons and allowed decisions, so one table judges alike in both languages.
 *
 * `true` asks with every decision crossgate can express (approve, edit, reject, respond: crossgate
 * adds respond, which LangChain.js 1.5.14 lacks); `false` allows; a config asks with its
 * `allowedDecisions`. A `when` function and a function `description` are code a policy cannot carry:
 * refused unless `when: 'ask'` / `callableDescription: 'drop'` say how to handle them. `argsSchema` is
 * not a policy matter: the middleware carries it onto each request (the schema an edit must pass).
 */

import { ConfigurationError, type DecisionKind, type JsonObject } from '@crossgate/client';

import { CAPABILITIES } from './capabilities.js';

/** One tool's setting, as LangChain.js takes it (plus crossgate's `respond`). */
export type InterruptOnSetting =
  | boolean
  | {
      allowedDecisions: readonly DecisionKind[];
      description?: string | ((...args: never[]) => unknown);
      when?: (...args: never[]) => unknown;
      argsSchema?: JsonObject;
    };

export type InterruptOn = Readonly<Record<string, InterruptOnSetting>>;

export interface ImportOptions {
  /** A `when` predicate: refuse the import, or ask for every call of that tool (at least as often). */
  when?: 'refuse' | 'ask';
  /** A function `description`: refuse the import, or drop it (crossgate's text is shown). */
  callableDescription?: 'refuse' | 'drop';
  frameworks?: readonly string[];
}

/** A rule as a crossgate policy file writes it. */
export interface PolicyRuleDocument {
  name: string;
  verdict: 'allow' | 'ask';
  tool: string;
  reason: string;
  frameworks?: string[];
  allowed_decisions?: DecisionKind[];
  description?: string;
}

const CONFIG_KEYS = new Set(['allowedDecisions', 'description', 'when', 'argsSchema']);
const ASK_REASON = 'interrupt_on asks a person to review this tool.';

/** Policy rules for `interruptOn`: ask for `true` and configs, allow for `false`. */
export function importInterruptOn(interruptOn: InterruptOn, options: ImportOptions = {}): PolicyRuleDocument[] {
  if (typeof interruptOn !== 'object' || interruptOn === null || Array.isArray(interruptOn)) {
    throw new ConfigurationError('interruptOn must be an object of tool name to setting');
  }
  return Object.entries(interruptOn).map(([tool, setting]) => rule(tool, setting, options));
}

/**
 * A whole policy document for `crossgate serve --policy`: the rules, and (as LangChain runs the tools
 * `interruptOn` does not list without review) `default: allow` unless `default` says otherwise.
 */
export function interruptOnPolicy(interruptOn: InterruptOn, options: ImportOptions & { default?: 'allow' | 'ask' | 'deny' } = {}): JsonObject {
  return { version: 1, default: options.default ?? 'allow', rules: importInterruptOn(interruptOn, options) as unknown as JsonObject[] };
}

/** The decisions a reviewer may make for `tool`'s calls under `interruptOn` (all, when not listed or `true`). */
export function allowedDecisionsFor(interruptOn: InterruptOn | undefined, tool: string): readonly DecisionKind[] {
  const setting = interruptOn?.[tool];
  return typeof setting === 'object' ? setting.allowedDecisions : CAPABILITIES;
}

function rule(tool: string, setting: InterruptOnSetting, options: ImportOptions): PolicyRuleDocument {
  const where = `interruptOn[${JSON.stringify(tool)}]`;
  if (tool === '') throw new ConfigurationError('interruptOn: tool names must be non-empty strings');
  const common = { tool: literalGlob(tool), ...(options.frameworks?.length ? { frameworks: [...options.frameworks] } : {}) };
  if (setting === true) return { name: `langchain:ask:${tool}`, verdict: 'ask', reason: ASK_REASON, ...common };
  if (setting === false) return { name: `langchain:allow:${tool}`, verdict: 'allow', reason: `interrupt_on lets ${tool} run without review.`, ...common };
  if (typeof setting !== 'object' || setting === null || Array.isArray(setting)) {
    throw new ConfigurationError(`${where}: expected true, false or a config object, got ${setting === null ? 'null' : typeof setting}`);
  }
  const unknown = Object.keys(setting).filter((k) => !CONFIG_KEYS.has(k)).sort();
  if (unknown.length > 0) throw new ConfigurationError(`${where}: unknown key(s) ${unknown.join(', ')}; expected ${[...CONFIG_KEYS].sort().join(', ')}`);
  if (setting.when !== undefined && (options.when ?? 'refuse') === 'refuse') {
    throw new ConfigurationError(
      `${where}: 'when' is a function and cannot be imported; pass when: 'ask' to ask for every ${tool} call, or write policy rules with argument conditions instead`,
    );
  }
  const description = describe(setting.description, where, options.callableDescription ?? 'refuse');
  return {
    name: `langchain:ask:${tool}`,
    verdict: 'ask',
    reason: ASK_REASON,
    allowed_decisions: decisions(setting.allowedDecisions, where),
    ...(description !== undefined ? { description } : {}),
    ...common,
  };
}

function decisions(value: unknown, where: string): DecisionKind[] {
  if (value === undefined) throw new ConfigurationError(`${where}: allowedDecisions is required (LangChain requires it too)`);
  if (!Array.isArray(value) || value.length === 0) throw new ConfigurationError(`${where}: allowedDecisions must be a non-empty list of ${CAPABILITIES.join(', ')}`);
  const found: DecisionKind[] = [];
  for (const item of value) {
    if (!CAPABILITIES.includes(item as DecisionKind)) {
      throw new ConfigurationError(`${where}: allowedDecisions: unknown decision ${JSON.stringify(item)}; expected ${CAPABILITIES.join(', ')}`);
    }
    if (!found.includes(item as DecisionKind)) found.push(item as DecisionKind);
  }
  return found;
}

function describe(value: unknown, where: string, handling: 'refuse' | 'drop'): string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  if (typeof value === 'function') {
    if (handling === 'drop') return undefined;
    throw new ConfigurationError(`${where}: description is a function and cannot be imported; pass callableDescription: 'drop' to use crossgate's description, or give a string`);
  }
  throw new ConfigurationError(`${where}: description must be a string, got ${typeof value}`);
}

/** `name` as a tool glob that matches only itself. */
function literalGlob(name: string): string {
  return [...name].map((c) => ('*?['.includes(c) ? `[${c}]` : c)).join('');
}
