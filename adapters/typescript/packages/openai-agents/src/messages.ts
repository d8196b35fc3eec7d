/** What the model reads when crossgate did not run a call: the same words as `crossgate_openai`. */

export const NOT_THROUGH_GATE = (tool: string) =>
  `crossgate did not run ${tool}: it needs a reviewer's decision, and this run was not started through ` +
  "crossgate's Gate, so no decision exists for it. Do not retry it; tell the user it needs approval.";

export const MALFORMED = (tool: string, problem: string) =>
  `crossgate did not run ${tool}: ${problem}. Nothing was executed. ` +
  `Call ${tool} again with a JSON object that matches its parameters.`;

export const NOT_GATED = (tool: string) => `crossgate did not run ${tool}: it is not a function tool crossgate gates.`;
