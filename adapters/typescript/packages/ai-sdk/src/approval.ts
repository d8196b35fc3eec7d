/**
 * The `toolApproval` function a `Gate` installs: the server's verdict for each call, as AI SDK statuses.
 *
 * allow → `not-applicable` (the gated execute runs and records it), deny → `denied` with the policy's
 * reason (the model reads execution-denied), ask → `user-approval` with the request stored (inline
 * wait) or prepared for the parked run. The SDK re-resolves approved calls on resume; the existing
 * request answers then, and `user-approval` does not block it.
 */

import { denyMessage, fingerprintRefusal } from './messages.js';
import { CAPABILITIES } from './capabilities.js';
import { callRequestId, currentScope } from './scope.js';
import { type Binding, isJsonObject, MALFORMED, OUTSIDE_RUN, toolCall } from './tools.js';

/** The part of the SDK's approval options this function reads. */
export interface ApprovalInput {
  toolCall: { toolName: string; toolCallId: string; input: unknown };
}

export type Status =
  | { type: 'not-applicable' }
  | { type: 'denied'; reason: string }
  | { type: 'user-approval'; reason?: string };

export function approvalFunction(binding: Binding, gated: ReadonlySet<string>, describe: (tool: string) => string | null) {
  return async ({ toolCall: sdkCall }: ApprovalInput): Promise<Status> => {
    const { toolName: tool, toolCallId, input } = sdkCall;
    if (!gated.has(tool)) return { type: 'not-applicable' };
    const scope = currentScope();
    if (scope === undefined) return { type: 'denied', reason: OUTSIDE_RUN(tool) };
    if (!isJsonObject(input)) return { type: 'denied', reason: MALFORMED(tool) };
    const call = toolCall(scope, tool, input, toolCallId);
    const options = {
      request_id: callRequestId(scope.run, toolCallId),
      capabilities: CAPABILITIES,
      requested_by: scope.requestedBy,
      description: describe(tool),
    };
    let submission;
    try {
      submission = scope.storeNow ? await binding.client.submit(call, options) : await binding.client.prepare(call, options);
    } catch (error) {
      const refusal = fingerprintRefusal(tool, error);
      if (refusal !== null) return { type: 'denied', reason: refusal };
      throw error;
    }
    if (submission.request !== null) {
      scope.asks.set(toolCallId, { request: submission.request, stored: submission.stored });
      return { type: 'user-approval', reason: submission.request.reason };
    }
    if (submission.verdict.kind === 'allow') {
      scope.allowed.add(toolCallId);
      return { type: 'not-applicable' };
    }
    return { type: 'denied', reason: denyMessage(tool, submission.verdict) };
  };
}
