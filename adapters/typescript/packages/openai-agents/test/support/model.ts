/**
 * `PlannedModel`: a real implementation of the SDK's `Model` interface for offline tests. It emits each
 * planned turn of function calls until the input answers them, then a final text. It decides from the
 * input alone, so a fresh model in another process continues a resumed run where the first one stopped.
 */

import { Usage, type AgentInputItem, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { assistantMessage, functionCall } from '@openai/agents/testing';

export interface PlannedCall {
  name: string;
  args: Record<string, unknown>;
  callId: string;
}

export const FINAL_PREFIX = 'Finished. The tools answered: ';

export class PlannedModel implements Model {
  readonly requests: ModelRequest[] = [];

  constructor(readonly turns: PlannedCall[][]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const input = Array.isArray(request.input) ? request.input : [];
    const made = new Set(input.flatMap((i) => (i.type === 'function_call' ? [i.callId] : [])));
    const next = this.turns.find((turn) => turn.some((c) => !made.has(c.callId)));
    const output = next
      ? next.map((c) => functionCall(c.name, c.args, { callId: c.callId }))
      : [assistantMessage(FINAL_PREFIX + JSON.stringify(told(input)))];
    return { usage: new Usage(), output, responseId: `resp_${this.requests.length}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('PlannedModel does not stream');
  }

  /** What the model was told for each call id, in the last request it received. */
  told(): Record<string, string> {
    const last = this.requests.at(-1);
    return told(last && Array.isArray(last.input) ? last.input : []);
  }
}

/** call id -> the text of its function_call_result, in `input`. */
export function told(input: AgentInputItem[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (const item of input) {
    if (item.type !== 'function_call_result') continue;
    const output = item.output as unknown;
    found[item.callId] =
      typeof output === 'string' ? output : output && typeof output === 'object' && 'text' in output ? String(output.text) : JSON.stringify(output);
  }
  return found;
}
