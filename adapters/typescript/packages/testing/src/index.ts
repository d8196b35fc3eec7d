/** Test support shared by the crossgate TypeScript packages (private; not published). */

export { crossgateCli, environment, pythonExecutable, pythonOps } from './python.js';
export type { Completed } from './python.js';
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
