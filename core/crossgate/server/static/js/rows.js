// The pending list's own buttons: approve or reject one row (a reject asks for its message in place).

import { visibleText } from "./hidden.js";
import { afterRefresh, refreshPending } from "./pending.js";

let openReject = null;  // {id, text, focus}: a row's reject form, kept across live updates with its focus

function say(text, failed) {
  const rowStatus = document.getElementById("row-status");
  if (!rowStatus) return;
  rowStatus.hidden = false;
  rowStatus.className = "row-status " + (failed ? "failed" : "ok");
  rowStatus.textContent = visibleText(text);
}

async function decideRow(button, decision) {
  const id = button.dataset.id;
  const body = Object.assign({ fingerprint: button.dataset.fingerprint }, decision);
  button.disabled = true;
  try {
    const response = await fetch("/api/requests/" + encodeURIComponent(id) + "/decision", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await response.json().catch(() => ({ message: response.statusText }));
    if (response.ok) {
      const past = decision.kind === "approve" ? "approved" : "rejected";
      const who = answer.decision ? " by " + answer.decision.reviewer : " (one approval recorded; more are needed)";
      say(past + " " + button.dataset.tool + " " + id + who, false);
      if (openReject && openReject.id === id) openReject = null;
    } else {
      say("not decided " + button.dataset.tool + " " + id + ": " + (answer.message || response.status), true);
    }
  } catch (err) {
    say("Could not reach the server: " + err, true);
  }
  await refreshPending();
}

export function showRejectForm(row, text, focus = "message") {
  let form = row.querySelector("form.row-reject-form");
  if (!form) {
    form = document.createElement("form");
    form.className = "row-reject-form";
    form.noValidate = true;
    const area = document.createElement("textarea");
    area.name = "message";
    area.rows = 2;
    area.maxLength = 4000;
    area.placeholder = "Message to the agent (required; the model reads it)";
    const send = document.createElement("button");
    send.type = "submit";
    send.className = "danger";
    send.textContent = "Reject";
    const cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "link";
    cancel.textContent = "Cancel";
    cancel.addEventListener("click", () => { openReject = null; form.remove(); });
    area.addEventListener("input", () => { openReject = { id: row.dataset.id, text: area.value, focus: "message" }; });
    send.name = "send";
    cancel.name = "cancel";
    for (const part of [area, send, cancel]) {
      // Remembered so that a live update, which rebuilds the rows, gives the focus back where the reviewer left it.
      part.addEventListener("focus", () => { if (openReject && openReject.id === row.dataset.id) openReject.focus = part.name; });
    }
    form.append(area, send, cancel);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const message = area.value.trim();
      if (!message) { say("A rejection needs a message: the agent reads it, so say what to do instead.", true); area.focus(); return; }
      decideRow(row.querySelector(".row-reject"), { kind: "reject", message: message });
    });
    row.appendChild(form);
  }
  form.elements.message.value = text || "";
  openReject = { id: row.dataset.id, text: text || "", focus: focus };
  (form.elements[focus] || form.elements.message).focus();
}

export function setupRows() {
  document.addEventListener("click", (event) => {
    const button = event.target.closest ? event.target.closest(".row-approve, .row-reject") : null;
    if (!button || button.disabled) return;
    if (button.classList.contains("row-approve")) decideRow(button, { kind: "approve" });
    else showRejectForm(button.closest(".req-row"), "");
  });
  afterRefresh(() => {  // a live update replaced the rows: put an open reject form back, with its text
    if (!openReject) return;
    const row = document.querySelector('#pending .req-row[data-id="' + CSS.escape(openReject.id) + '"]');
    if (row && row.querySelector(".row-reject:not(:disabled)")) showRejectForm(row, openReject.text, openReject.focus); else openReject = null;
  });
}
