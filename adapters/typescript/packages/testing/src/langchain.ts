/**
 * A scripted chat model for the LangChain.js and LangGraph.js tests (LangChain's own `BaseChatModel`
 * interface, no network): it proposes tool calls while it has read no tool result, then answers with
 * the results it read. A subpath of its own, so the other packages' tests need no LangChain.
 */

import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';

export interface ScriptedCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** What the model read as tool results, by tool call id. */
export function toolResults(messages: readonly BaseMessage[]): Record<string, { content: string; status: string | undefined }> {
  const found: Record<string, { content: string; status: string | undefined }> = {};
  for (const m of messages) {
    if (ToolMessage.isInstance(m)) found[m.tool_call_id] = { content: String(m.content), status: (m as ToolMessage).status };
  }
  return found;
}

/** Proposes `calls` while it has read no tool result; then answers with the results it read. */
export class ScriptedModel extends BaseChatModel {
  readonly prompts: BaseMessage[][] = [];
  constructor(readonly calls: readonly ScriptedCall[]) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.prompts.push(messages);
    const read = toolResults(messages);
    const message =
      Object.keys(read).length === 0
        ? new AIMessage({ content: '', tool_calls: this.calls.map((c) => ({ ...c, type: 'tool_call' as const })) })
        : new AIMessage({ content: `I read: ${JSON.stringify(read)}` });
    return { generations: [{ text: String(message.content), message }] };
  }
}
