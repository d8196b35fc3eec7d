/**
 * The callbacks crossgate installs in one session's options: PreToolUse, canUseTool and PostToolUse.
 *
 * Order on the CLI side: the PreToolUse hook, then (when the CLI's rules ask) canUseTool, then the tool.
 * The hook sees every call, including those an allow rule or a mode would approve, so it applies the
 * policy: deny, no objection for an allowed call, and for a call the policy asks about it stores the
 * request and answers `defer` (after holding up to `hold` seconds): a pending request never holds the
 * CLI, so a crash while a reviewer thinks loses nothing. When the session is resumed, the CLI runs the
 * hook again for the same tool use, which answers `ask`, and canUseTool answers from the decision.
 * A tool use whose input is not the one reviewed (an edited session file) is refused in both.
 */

import type { CanUseTool, HookCallback, HookJSONOutput, PermissionResult } from '@anthropic-ai/claude-agent-sdk';
import {
  applyDecision,
  approvedArgs,
  type ApprovalRequest,
  denyMessage,
  fingerprint,
  isOpen,
  type JsonObject,
  type ParkedRun,
  resolution,
  type Submission,
  type ToolCall,
} from '@crossgate/client';

import { CLI_CAPABILITIES, FRAMEWORK, GATED_CAPABILITIES } from './capabilities.js';
import { callRequestId, findRequest, isObject, short, toolCall, type SessionScope } from './calls.js';
import type { GateCore } from './handlers.js';
import { FAIL_CLOSED, HELD_TOO_LONG, MISMATCH, NO_RESPOND, ONE_DEFERRAL } from './messages.js';
import { nameTool, type ToolName } from './names.js';

/** A held call's request expires this long after its hold ends (the hold itself cancels it first). */
const HOLD_GRACE_SECONDS = 5;

export interface BindingOptions {
  scope: SessionScope;
  /** The servers the options configure, to name their tools. */
  servers: readonly string[];
  /** The servers whose tools crossgate's handler runs. */
  gatedServers: ReadonlySet<string>;
  /** Seconds the hook holds the CLI waiting for a decision before it defers the call. */
  hold: number;
  /** The session being resumed, and the deferred tool use it must see asked again. */
  session?: string;
  expect?: string;
}

export class Binding {
  /** Parked runs this session's hook created, in order. */
  readonly parked: ParkedRun[] = [];
  readonly expect: string | null;
  /** Settles once the CLI asked about the deferred tool use a resume waits for. */
  readonly reasked: Promise<void>;
  readonly #core: GateCore;
  readonly #options: BindingOptions;
  #markReasked: () => void = () => {};

  constructor(core: GateCore, options: BindingOptions) {
    this.#core = core;
    this.#options = options;
    this.expect = options.expect ?? null;
    this.reasked = new Promise((resolve) => (this.#markReasked = resolve));
  }

  get scope(): SessionScope {
    return this.#options.scope;
  }

  // PreToolUse ---------------------------------------------------------------------------------
  readonly preToolUse: HookCallback = async (input, toolUseID) => {
    try {
      return await this.#preToolUse(input as unknown as Record<string, unknown>, toolUseID);
    } catch (error) {
      return hookOutput('deny', FAIL_CLOSED(short(error)));
    }
  };

  async #preToolUse(data: Record<string, unknown>, toolUseID: string | undefined): Promise<HookJSONOutput> {
    const { client } = this.#core;
    const id = toolUseID || String(data.tool_use_id ?? '');
    const session = text(data.session_id) ?? this.#options.session ?? null;
    this.#seen(id);
    const reported = isObject(data.mcp_server) ? text(data.mcp_server.name) : null;
    const args = isObject(data.tool_input) ? data.tool_input : {};
    const name = this.#name(id, String(data.tool_name ?? ''), session, reported);
    const extra = { permission_mode: data.permission_mode, cwd: data.cwd, agent_id: data.agent_id };
    if (typeof name === 'string') return this.#refuse(name, String(data.tool_name ?? ''), args, id, session, extra);
    const call = toolCall(name, args, id, session, this.scope, extra);
    const rid = callRequestId(session, id);
    const existing = await findRequest(client, rid);
    if (existing !== null) {
      if (existing.fingerprint !== fingerprint(call.tool, args)) {
        await client.recordOutcome({ request_id: existing.id, ran: false, error: MISMATCH });
        return hookOutput('deny', MISMATCH);
      }
      if (!isOpen(existing)) return hookOutput('ask', existing.reason || 'crossgate has a decision for this call');
    }
    let submission: Submission | null = null;
    if (existing === null) {
      const verdict = await client.evaluate(call);
      if (verdict.kind === 'allow' && this.#gated(name)) return {}; // crossgate's handler records it when it runs
      if (verdict.kind !== 'ask') {
        // Recorded here, once: canUseTool may not be consulted at all (allow rules, modes).
        const recorded = await client.submit(call, { requested_by: this.scope.requestedBy });
        if (recorded.request === null) {
          return recorded.verdict.kind === 'deny' ? hookOutput('deny', recorded.verdict.reason) : {};
        }
        submission = recorded; // the policy began to ask in between: the request is stored
      }
    }
    if (this.parked.some((p) => p.run === session)) return hookOutput('deny', ONE_DEFERRAL); // the CLI keeps one per turn
    const options = {
      capabilities: this.#gated(name) ? GATED_CAPABILITIES : CLI_CAPABILITIES,
      request_id: rid,
      requested_by: this.scope.requestedBy,
    };
    // Held inline, the request is stored now so reviewers can answer while the hook waits; otherwise it
    // is stored with its parked run, so nobody sees a request that cannot be resumed.
    const hold = this.#options.hold;
    submission ??= hold > 0 ? await client.submit(call, options) : await client.prepare(call, options);
    let request = submission.request;
    if (request === null) return submission.verdict.kind === 'deny' ? hookOutput('deny', submission.verdict.reason) : {};
    if (hold > 0 && isOpen(request)) request = await client.wait(request.id, hold);
    if (!isOpen(request)) return hookOutput('ask', request.reason);
    this.parked.push(await this.#park(call, request, submission.stored, session ?? id, data.cwd));
    return hookOutput('defer', request.reason);
  }

  async #park(call: ToolCall, request: ApprovalRequest, stored: boolean, run: string, cwd: unknown): Promise<ParkedRun> {
    const state = {
      session_id: call.session,
      tool_use_id: call.call_id,
      tool: call.tool,
      input: call.args,
      cwd: typeof cwd === 'string' ? cwd : null,
      request_id: request.id,
      context: this.scope.context,
      agent: this.scope.agent,
    };
    return this.#core.client.park({
      framework: FRAMEWORK,
      run,
      request_ids: [request.id],
      state: JSON.stringify(state),
      metadata: { tool_use_id: call.call_id ?? null, tool: call.tool, requested_by: this.scope.requestedBy },
      new_requests: stored ? [] : [request],
    });
  }

  // canUseTool ---------------------------------------------------------------------------------
  readonly canUseTool: CanUseTool = async (toolName, input, options) => {
    try {
      return await this.#canUseTool(toolName, isObject(input) ? (input as JsonObject) : {}, options);
    } catch (error) {
      return deny(FAIL_CLOSED(short(error)));
    }
  };

  async #canUseTool(toolName: string, input: JsonObject, options: Parameters<CanUseTool>[2]): Promise<PermissionResult> {
    const { client } = this.#core;
    const id = options.toolUseID;
    this.#seen(id);
    const session = this.#core.calls.get(id)?.session ?? this.#options.session ?? null;
    const name = this.#name(id, toolName, session, options.mcpServer?.name ?? null);
    const extra = { title: options.title, description: options.description, display_name: options.displayName, agent_id: options.agentID };
    if (typeof name === 'string') {
      await this.#refuse(name, toolName, input, id, session, extra);
      return deny(name);
    }
    const call = toolCall(name, input, id, session, this.scope, extra);
    const rid = callRequestId(session, id);
    let request = await findRequest(client, rid);
    if (request === null) {
      const verdict = await client.evaluate(call);
      if (verdict.kind === 'allow') return { behavior: 'allow', updatedInput: input }; // the hook, or the handler, records it
      const hold = this.#options.hold;
      // A call the hook did not defer (it holds only as long as `hold`): held here, then refused.
      const submission = await client.submit(call, {
        capabilities: this.#gated(name) ? GATED_CAPABILITIES : CLI_CAPABILITIES,
        request_id: rid,
        requested_by: this.scope.requestedBy,
        timeout_seconds: hold + HOLD_GRACE_SECONDS,
      });
      if (submission.request === null) {
        return submission.verdict.kind === 'deny' ? deny(denyMessage(call.tool, submission.verdict)) : { behavior: 'allow', updatedInput: input };
      }
      request = submission.request;
    }
    if (isOpen(request)) {
      const hold = this.#options.hold;
      request = hold > 0 ? await client.wait(request.id, hold) : request;
      if (isOpen(request)) {
        await client.cancel(request.id, HELD_TOO_LONG(hold));
        return deny(HELD_TOO_LONG(hold));
      }
    }
    return this.#answer(request, call, name, input);
  }

  /** The CLI's answer from the decision. For crossgate's own tools its handler applies it; for others this does. */
  async #answer(request: ApprovalRequest, call: ToolCall, name: ToolName, input: JsonObject): Promise<PermissionResult> {
    const { client } = this.#core;
    const check = { actor: FRAMEWORK };
    if (!this.#gated(name)) {
      // The CLI runs the tool itself: the check (marked applied, once) happens here, right before it does.
      const applied = await applyDecision(client, request, input, check);
      if (applied.run) return { behavior: 'allow', updatedInput: applied.args ?? {} };
      if (applied.responded) {
        await client.recordOutcome({ request_id: request.id, ran: false, result: NO_RESPOND(call.tool) });
        return deny(NO_RESPOND(call.tool));
      }
      return deny(applied.message);
    }
    const approved = approvedArgs(request);
    const held = fingerprint(call.tool, input);
    if (held !== request.fingerprint && (approved === null || held !== fingerprint(call.tool, approved))) {
      await client.recordOutcome({ request_id: request.id, ran: false, error: MISMATCH });
      return deny(MISMATCH);
    }
    const decision = resolution(request);
    if (decision === null || decision.kind === 'reject') {
      return deny((await applyDecision(client, request, null, check)).message);
    }
    // Approve and edit run the arguments the reviewer saw or gave; respond lets the handler answer.
    return { behavior: 'allow', updatedInput: decision.kind === 'respond' ? input : (approved ?? input) };
  }

  // PostToolUse --------------------------------------------------------------------------------
  readonly postToolUse: HookCallback = async (input, toolUseID) => {
    try {
      await this.#record(input as unknown as Record<string, unknown>, toolUseID ?? '');
    } catch {
      // an outcome that cannot be recorded changes nothing that ran
    }
    return {};
  };

  /** Record what a tool the CLI runs itself did, and whether it ran with exactly the approved input. */
  async #record(data: Record<string, unknown>, toolUseID: string): Promise<void> {
    const id = toolUseID || String(data.tool_use_id ?? '');
    const seen = this.#core.calls.get(id);
    if (seen === undefined || this.#gated(seen.name)) return; // crossgate's handler recorded its own
    const request = await findRequest(this.#core.client, callRequestId(seen.session, id));
    if (request === null) return;
    const approved = approvedArgs(request);
    const ran = isObject(data.tool_input) ? data.tool_input : {};
    const problem =
      approved !== null && fingerprint(seen.name.tool, approved) !== fingerprint(seen.name.tool, ran)
        ? 'the executed input is not the approved input'
        : null;
    const result = JSON.stringify(data.tool_response ?? null).slice(0, 2000);
    await this.#core.client.recordOutcome({ request_id: request.id, ran: true, result, error: problem });
  }

  // helpers ------------------------------------------------------------------------------------
  #name(id: string, claude: string, session: string | null, reported: string | null): ToolName | string {
    const known = this.#core.calls.get(id);
    if (known !== undefined && known.name.claude === claude) return known.name;
    const name = nameTool(claude, this.#options.servers, reported);
    if (typeof name !== 'string' && id) this.#core.calls.set(id, { session, name, scope: this.scope });
    return name;
  }

  #gated(name: ToolName): boolean {
    return name.server !== null && this.#options.gatedServers.has(name.server);
  }

  async #refuse(message: string, tool: string, args: JsonObject, id: string, session: string | null, extra: Record<string, unknown>) {
    const claude: ToolName = { claude: tool, tool, server: null };
    await this.#core.client.recordOutcome({ request_id: null, ran: false, result: message, call: toolCall(claude, args, id, session, this.scope, extra) });
    return hookOutput('deny', message);
  }

  #seen(id: string): void {
    if (this.expect !== null && id === this.expect) this.#markReasked();
  }
}

/** A PreToolUse hook answer: `allow`, `deny`, `ask` or `defer`. */
export function hookOutput(decision: 'allow' | 'deny' | 'ask' | 'defer', reason?: string): HookJSONOutput {
  return {
    hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: decision, ...(reason ? { permissionDecisionReason: reason } : {}) },
  };
}

/** A denial the model reads verbatim (never `interrupt`: the CLI would drop the message). */
function deny(message: string): PermissionResult {
  return { behavior: 'deny', message };
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value ? value : null;
}
