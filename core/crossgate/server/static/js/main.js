// crossgate reviewer page: live updates over server-sent events, the decision forms, and an arguments
// editor generated from the tool's JSON Schema. ES modules served as they are: no build step, no
// dependencies. This module wires each page's parts; each module does one job.

import { setupBatch } from "./batch.js";
import { setupCopy } from "./copy.js";
import { setupRequest } from "./decision.js";
import { setupKeys } from "./keys.js";
import { reloadOn } from "./live.js";
import { setupPending } from "./pending.js";
import { setupRows } from "./rows.js";
import { setupRules } from "./rules.js";
import { setupTimes } from "./times.js";
import { setupTools } from "./tools.js";

const page = document.body.dataset.page;
const HISTORY_KINDS = ["decided", "applied", "ran", "not_run", "expired", "cancelled", "rule_added", "rule_revoked"];

if (page === "pending") {
  setupTools();
  setupPending();
  const batch = document.getElementById("batch");
  if (batch) setupBatch(batch);
  setupTimes();
  setupRows();
} else if (page === "runs") {
  reloadOn((kind) => kind.startsWith("run_"));
} else if (page === "history" || page === "rules") {
  reloadOn((kind) => HISTORY_KINDS.includes(kind));
} else if (page === "request") {
  setupRequest();
}
setupCopy();
setupKeys(page);
setupRules();
