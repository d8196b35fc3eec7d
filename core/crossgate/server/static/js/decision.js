// One request's page: the call shown with flagged characters marked, the decision form (with an edit's
// diff to confirm), and live reloads as the request settles, reaches the agent and records its outcome.

import { visibleText } from "./hidden.js";
import { jsonText } from "./json.js";
import { debounce, listen } from "./live.js";
import { buildEditor } from "./editor.js";
import { flagNotice, showJson, showText } from "./show.js";

export function setupRequest() {
  const dataNode = document.getElementById("request-data");
  if (!dataNode) return;
  const data = JSON.parse(dataNode.textContent);
  const argsNode = document.getElementById("args-json");
  const toolNode = document.querySelector("#request .tool");
  showJson(argsNode, data.args);
  showText(toolNode, data.tool);
  flagNotice(argsNode, [data.tool, jsonText(data.args)]);
  let submitting = false;
  const pending = document.getElementById("request").dataset.status === "pending";
  const reload = debounce(() => window.location.reload(), 300);
  listen((change) => {
    if (change.request_id !== data.id || submitting) return;
    // Reload when someone else settles this request, and once it is settled, as its decision reaches the
    // agent and the outcome (ran or not_run) comes in: the page says what became of the call.
    const settles = pending && ["decided", "expired", "cancelled"].includes(change.kind);
    const follows = !pending && ["applied", "ran", "not_run", "expired", "cancelled"].includes(change.kind);
    if (settles || follows) reload();
  });
  const form = document.getElementById("decision-form");
  if (form) setupDecision(form, data, () => { submitting = true; });
}

function setupDecision(form, data, markSubmitting) {
  const tabs = Array.from(document.querySelectorAll(".tab"));
  const panes = Array.from(form.querySelectorAll(".pane"));
  const submit = document.getElementById("decision-submit");
  const errorBox = document.getElementById("decision-error");
  const remember = document.getElementById("remember");
  const labels = { approve: "Approve", edit: "Run with these arguments", reject: "Reject", respond: "Send this result" };
  let editor = null;
  let kind = data.allowed[0];
  let confirmed = null;  // the edited arguments whose diff the reviewer has seen
  const diffBox = document.createElement("div");
  diffBox.id = "edit-diff";
  diffBox.hidden = true;

  function resetConfirm() {
    confirmed = null;
    diffBox.hidden = true;
    if (kind === "edit") submit.textContent = labels.edit;
  }

  // The edit against the proposed arguments, key by key; false when nothing changed.
  function showDiff(before, after) {
    const rows = [];
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    for (const key of keys) {
      const had = Object.prototype.hasOwnProperty.call(before, key);
      const has = Object.prototype.hasOwnProperty.call(after, key);
      if (had && has && JSON.stringify(before[key]) === JSON.stringify(after[key])) continue;
      rows.push([key, had ? jsonText(before[key]) : "—", has ? jsonText(after[key]) : "—"]);
    }
    if (!rows.length) return false;
    const title = document.createElement("p");
    title.className = "muted";
    title.textContent = "Check the change, then confirm:";
    const table = document.createElement("table");
    table.className = "diff";
    const head = table.insertRow();
    ["argument", "proposed", "edited"].forEach((label) => {
      const th = document.createElement("th");
      th.textContent = label;
      head.appendChild(th);
    });
    rows.forEach(([key, old, now]) => {
      const row = table.insertRow();
      [[key, ""], [old, "old"], [now, "new"]].forEach(([text, cls]) => {
        const cell = row.insertCell();
        cell.className = cls;
        showText(cell, text);
      });
    });
    diffBox.replaceChildren(title, table);
    diffBox.hidden = false;
    return true;
  }

  function select(next) {
    kind = next;
    tabs.forEach((t) => t.classList.toggle("active", t.dataset.kind === kind));
    tabs.forEach((t) => t.setAttribute("aria-selected", String(t.dataset.kind === kind)));
    panes.forEach((p) => { p.hidden = p.dataset.kind !== kind; });
    submit.textContent = labels[kind];
    submit.className = kind === "reject" ? "danger" : "primary";
    remember.hidden = kind === "respond";
    showCovers();
    if (kind === "edit" && editor === null) {
      const fields = document.getElementById("edit-fields");
      editor = buildEditor(fields, data.schema, data.args);
      fields.after(diffBox);
      fields.addEventListener("input", resetConfirm);
      fields.addEventListener("change", resetConfirm);
    }
    resetConfirm();
    showError(null);
  }
  // the remember control says what the standing rule would cover before it is saved (texts from the server)
  function showCovers() {
    const scope = form.elements.scope.value;
    const match = form.elements.match.value;
    const agentOnly = form.elements.this_agent_only && form.elements.this_agent_only.checked ? 1 : 0;
    const key = scope === "once" ? "once" : [scope, match, agentOnly, kind === "edit" && match === "exact" ? 1 : 0].join(":");
    remember.querySelectorAll("[data-covers]").forEach((line) => { line.hidden = line.dataset.covers !== key; });
  }
  remember.addEventListener("change", showCovers);
  tabs.forEach((t) => t.addEventListener("click", () => select(t.dataset.kind)));
  select(kind);

  function showError(text) {
    errorBox.hidden = !text;
    errorBox.textContent = text ? visibleText(text) : "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { kind: kind, fingerprint: data.fingerprint };
    const note = form.elements.note.value.trim();
    if (note) body.note = note;
    if (kind === "edit") {
      const result = editor.read();
      if (result.errors.length) { showError(result.errors.join(" ")); return; }
      // First show what changes; a second click on the same arguments sends them.
      const shown = JSON.stringify(result.value);
      if (confirmed !== shown) {
        if (!showDiff(data.args, result.value)) { showError("No argument changed: approve the call instead, or change an argument."); return; }
        confirmed = shown;
        submit.textContent = "Confirm: run with these arguments";
        return;
      }
      body.args = result.value;
    } else if (kind === "reject") {
      const message = form.elements.message.value.trim();
      if (!message) {
        showError("A rejection needs a message: the agent reads it, so say what to do instead.");
        form.elements.message.focus();
        return;
      }
      body.message = message;
    } else if (kind === "respond") {
      body.content = form.elements.content.value;
    }
    const scope = form.elements.scope.value;
    if (kind !== "respond" && scope !== "once") {
      body.remember = { scope: scope, match: form.elements.match.value };
      if (form.elements.this_agent_only && form.elements.this_agent_only.checked) body.remember.this_agent_only = true;
    }
    submit.disabled = true;
    markSubmitting();
    try {
      const response = await fetch("/api/requests/" + encodeURIComponent(data.id) + "/decision", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (response.ok) { window.location.reload(); return; }
      const problem = await response.json().catch(() => ({ message: response.statusText }));
      showError(problem.message || "The server refused this decision.");
    } catch (err) {
      showError("Could not reach the server: " + err);
    }
    submit.disabled = false;
  });
}
