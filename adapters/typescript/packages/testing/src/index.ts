/** Test support shared by the crossgate TypeScript packages (private; not published). */

export { crossgateCli, environment, pythonExecutable, pythonOps, pythonOpsAsync } from './python.js';
export { auditEvents, forge, insertRule, REFUSAL, REFUSAL_REASON, refusals } from './forgery.js';
export type { Forged, Forgery } from './forgery.js';
export type { Completed } from './python.js';
export { calls, cliEnv, FINAL_TEXT, startMessagesApi, told } from './claude.js';
export type { MessagesApi, Told } from './claude.js';
export {
  AGENT,
  AGENT_TOKEN,
  OTHER_AGENT,
  OTHER_AGENT_TOKEN,
  REVIEWER,
  REVIEWER_TOKEN,
  SEED_POLICY,
  startServer,
} from './server.js';
export type { DecisionBody, LiveServer, ServerOptions } from './server.js';
export { TicketStore } from './tickets.js';
