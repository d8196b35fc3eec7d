/** The seed 003 agent: a triage agent that deletes tickets, with the ticket world in a file every process sees. */

import { Agent, setTracingDisabled, tool } from '@openai/agents';
import type { TicketStore } from '@crossgate/testing';
import { z } from 'zod';

import { PlannedModel, type PlannedCall } from './model.js';

setTracingDisabled(true);

export const REJECTION = 'A person rejected this delete: t1 is a real customer ticket. Keep it and do not retry.';

export const del = (id: string, callId = `call_${id}`): PlannedCall => ({ name: 'delete_ticket', args: { id }, callId });

/** A fresh agent graph with the same names and tools in every process, and its model. */
export function triage(tickets: TicketStore, turns: PlannedCall[][]): { agent: Agent<any, any>; model: PlannedModel } {
  const model = new PlannedModel(turns);
  const deleteTicket = tool({
    name: 'delete_ticket',
    description: 'Delete a ticket by id. This cannot be undone.',
    parameters: z.object({ id: z.string() }),
    execute: async ({ id }) => tickets.delete(id),
  });
  const agent = new Agent({ name: 'Triage', instructions: 'Delete the spam tickets.', tools: [deleteTicket], model });
  return { agent, model };
}
