/**
 * Offline models: the AI SDK's own `MockLanguageModelV4` (which Mastra runs too) and an implementation
 * of the OpenAI Agents SDK's `Model` interface. Each asks for every planned call in its first turn, and
 * once the tools answered, ends with a text naming what it read. They decide from their input alone, so
 * a fresh model in another process continues a resumed run where the first one stopped.
 */

import { Usage, type AgentInputItem, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { assistantMessage, functionCall } from '@openai/agents/testing';
import { MockLanguageModelV4 } from 'ai/test';

/** One call a model asks for, with its call id. */
export interface ModelCall {
  tool: string;
  args: Record<string, unknown>;
  callId: string;
}

type Prompt = Parameters<MockLanguageModelV4['doGenerate']>[0]['prompt'];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** What the model read for each tool call, by call id: the tool's text, or the reason it was denied. */
export function toolOutputs(prompt: Prompt): Record<string, string> {
  const found: Record<string, string> = {};
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const output = part.output as { type: string; value?: unknown; reason?: string };
      found[part.toolCallId] = output.type === 'execution-denied' ? (output.reason ?? '') : typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
    }
  }
  return found;
}

function answer(prompt: Prompt, planned: readonly ModelCall[]): GenerateResult {
  const read = toolOutputs(prompt);
  if (Object.keys(read).length === 0) {
    return {
      content: planned.map((c) => ({ type: 'tool-call' as const, toolCallId: c.callId, toolName: c.tool, input: JSON.stringify(c.args) })),
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: USAGE,
      warnings: [],
    };
  }
  return { content: [{ type: 'text', text: `I read: ${JSON.stringify(read)}` }], finishReason: { unified: 'stop', raw: 'stop' }, usage: USAGE, warnings: [] };
}

/** A `MockLanguageModelV4` (doGenerate for the AI SDK, doStream for Mastra) that makes `planned` in one turn. */
export function scriptedLanguageModel(planned: readonly ModelCall[]): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => answer(prompt, planned),
    doStream: async ({ prompt }) => {
      const result = answer(prompt, planned);
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          for (const part of result.content) {
            if (part.type === 'text') {
              controller.enqueue({ type: 'text-start', id: 't' });
              controller.enqueue({ type: 'text-delta', id: 't', delta: part.text });
              controller.enqueue({ type: 'text-end', id: 't' });
            } else controller.enqueue(part);
          }
          controller.enqueue({ type: 'finish', finishReason: result.finishReason, usage: USAGE });
          controller.close();
        },
      });
      return { stream } as Awaited<ReturnType<MockLanguageModelV4['doStream']>>;
    },
  });
}

/** The OpenAI Agents SDK `Model` that makes `planned` in its first turn, then ends with a text. */
export class OneTurnModel implements Model {
  readonly requests: ModelRequest[] = [];

  constructor(readonly planned: readonly ModelCall[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const input = Array.isArray(request.input) ? request.input : [];
    const made = input.some((i) => i.type === 'function_call');
    const output = made
      ? [assistantMessage(`I read: ${JSON.stringify(told(input))}`)]
      : this.planned.map((c) => functionCall(c.tool, c.args, { callId: c.callId }));
    return { usage: new Usage(), output, responseId: `resp_${this.requests.length}` };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('OneTurnModel does not stream');
  }

  /** What the model was told for each call id, in the last request it received. */
  told(): Record<string, string> {
    const last = this.requests.at(-1);
    return told(last && Array.isArray(last.input) ? last.input : []);
  }
}

function told(input: AgentInputItem[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (const item of input) {
    if (item.type !== 'function_call_result') continue;
    const output = item.output as unknown;
    found[item.callId] =
      typeof output === 'string' ? output : output && typeof output === 'object' && 'text' in output ? String(output.text) : JSON.stringify(output);
  }
  return found;
}
