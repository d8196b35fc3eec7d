// The pending list's batch decisions: pick rows, approve or reject them in one POST, read each result.

import { visibleText } from "./hidden.js";
import { afterRefresh, refreshPending } from "./pending.js";

export function setupBatch(form) {
  const picked = new Set();
  const selectAll = document.getElementById("select-all");
  const count = document.getElementById("batch-count");
  const approveButton = document.getElementById("approve-selected");
  const rejectButton = document.getElementById("reject-selected");
  const rejectBox = document.getElementById("batch-reject");
  const rejectConfirm = document.getElementById("reject-confirm");
  const errorBox = document.getElementById("batch-error");
  const results = document.getElementById("batch-results");
  const past = { approve: "approved", reject: "rejected" };
  let sending = false;

  const boxes = () => Array.from(document.querySelectorAll("#pending .pick-box:not(:disabled)"));

  // The list is replaced on every live update: keep the selection, minus requests no longer shown.
  function sync() {
    const shown = boxes();
    const ids = new Set(shown.map((box) => box.value));
    Array.from(picked).forEach((id) => { if (!ids.has(id)) picked.delete(id); });
    shown.forEach((box) => { box.checked = picked.has(box.value); });
    const n = picked.size;
    count.textContent = n === 0 ? "none selected" : n + " selected";
    selectAll.checked = n > 0 && n === shown.length;
    selectAll.indeterminate = n > 0 && n < shown.length;
    selectAll.disabled = shown.length === 0 || sending;
    approveButton.disabled = rejectButton.disabled = n === 0 || sending;
    rejectConfirm.disabled = sending;
    if (n === 0) rejectBox.hidden = true;
    form.hidden = document.querySelectorAll("#pending .req-row").length === 0;
  }
  afterRefresh(sync);

  function showError(text) {
    errorBox.hidden = !text;
    errorBox.textContent = text ? visibleText(text) : "";
  }

  document.addEventListener("change", (event) => {
    const box = event.target;
    if (!box.classList || !box.classList.contains("pick-box")) return;
    if (box.checked) picked.add(box.value); else picked.delete(box.value);
    sync();
  });
  selectAll.addEventListener("change", () => {
    boxes().forEach((box) => { if (selectAll.checked) picked.add(box.value); else picked.delete(box.value); });
    sync();
  });
  approveButton.addEventListener("click", () => send({ kind: "approve" }));
  rejectButton.addEventListener("click", () => {
    rejectBox.hidden = false;
    showError(null);
    form.elements.message.focus();
  });
  document.getElementById("reject-cancel").addEventListener("click", () => { rejectBox.hidden = true; showError(null); });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (rejectBox.hidden) return;
    const message = form.elements.message.value.trim();
    if (!message) {
      showError("A rejection needs a message: the agents read it, so say what to do instead.");
      form.elements.message.focus();
      return;
    }
    send({ kind: "reject", message: message });
  });

  // One POST for the whole selection; each request is decided (or refused) on its own.
  async function send(decision) {
    const chosen = boxes().filter((box) => picked.has(box.value));
    if (!chosen.length || sending) return;
    const note = form.elements.note.value.trim();
    const tools = {};
    const items = chosen.map((box) => {
      tools[box.value] = box.dataset.tool;
      const body = Object.assign({}, decision, { fingerprint: box.dataset.fingerprint });
      if (note) body.note = note;
      return { request_id: box.value, decision: body };
    });
    sending = true;
    sync();
    showError(null);
    try {
      const response = await fetch("/api/decisions", {
        method: "POST",
        credentials: "same-origin",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ items: items }),
      });
      if (response.ok) {
        showResults((await response.json()).results, tools);
        picked.clear();
        form.elements.message.value = "";
        form.elements.note.value = "";
      } else {
        const problem = await response.json().catch(() => ({ message: response.statusText }));
        showError(problem.message || "The server refused this batch.");
      }
    } catch (err) {
      showError("Could not reach the server: " + err);
    }
    sending = false;
    await refreshPending();
    sync();
  }

  function showResults(items, tools) {
    const decided = items.filter((item) => item.ok).length;
    const title = document.createElement("h2");
    title.textContent = decided + " of " + items.length + " decided";
    const list = document.createElement("ul");
    list.className = "results";
    items.forEach((item) => {
      const row = document.createElement("li");
      row.className = "result " + (item.ok ? "ok" : "failed");
      row.dataset.id = item.request_id;
      const outcome = document.createElement("strong");
      const what = document.createElement("a");
      what.href = "/requests/" + encodeURIComponent(item.request_id);
      what.textContent = visibleText((tools[item.request_id] || "") + " " + item.request_id);
      const detail = document.createElement("span");
      if (item.ok) {
        const kind = item.request.decision.kind;
        outcome.textContent = "decided";
        detail.textContent = " " + (past[kind] || kind) + " by " + visibleText(item.request.decision.reviewer) +
          " via " + item.request.decision.channel;
      } else {
        outcome.textContent = "not decided";
        detail.className = "why";
        detail.textContent = " " + item.error.status + ": " + visibleText(item.error.message);
      }
      row.append(outcome, " ", what, detail);
      list.appendChild(row);
    });
    results.replaceChildren(title, list);
    results.hidden = false;
  }

  sync();
}
