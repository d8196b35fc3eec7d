/** What the model reads when crossgate did not run a call: the same words as `crossgate_claude`. */

export const FAIL_CLOSED = (error: string) =>
  `crossgate could not reach a decision for this tool call (${error}), so it was not run.`;

export const MISMATCH = 'This tool call differs from the one the reviewer saw, so it was not run. Do not retry it.';

export const HELD_TOO_LONG = (seconds: number) =>
  `No reviewer answered within ${seconds} seconds while this tool call was held, so it was not run. ` +
  "Do not retry it; tell the user it needs a person's approval.";

export const ONE_DEFERRAL =
  'Another tool call of this turn is already waiting for a person\'s review, so this call was not run. ' +
  'Make this same call again after that one is decided.';

export const NOT_THROUGH_GATE = (tool: string) =>
  `crossgate did not run ${tool}: it needs a reviewer's decision, and no decision covers this call ` +
  "(it did not come through crossgate's permission callbacks). Do not retry it; tell the user it needs approval.";

export const NO_RESPOND = (tool: string) =>
  `crossgate did not run ${tool}: the reviewer answered in its place, which only tools crossgate runs itself can take.`;
