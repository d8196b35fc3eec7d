// Keyboard shortcuts: j/k, Enter, a, r, e, /, ? (the list in the page's "?" dialog).
// A decision by keyboard takes two keys (a, then Enter on the focused Approve), so a stray key
// decides nothing.

import { afterRefresh } from "./pending.js";
import { showRejectForm } from "./rows.js";

let current = null;  // the id of the list's current row

function rows() { return Array.from(document.querySelectorAll("#pending .req-row")); }

function markCurrent(row) {
  rows().forEach((r) => r.classList.toggle("current", r === row));
  current = row ? row.dataset.id : null;
  if (row) { row.scrollIntoView({ block: "nearest" }); row.querySelector("a.req").focus(); }
}

function currentRow() {
  return rows().find((r) => r.dataset.id === current) || null;
}

function move(step) {
  const all = rows();
  if (!all.length) return;
  const at = all.findIndex((r) => r.dataset.id === current);
  markCurrent(all[at < 0 ? 0 : Math.min(all.length - 1, Math.max(0, at + step))]);
}

function onList(key) {
  const row = currentRow() || (rows().length ? rows()[0] : null);
  if (key === "j") move(1);
  else if (key === "k") move(-1);
  else if (!row) return false;
  else if (key === "a") { markCurrent(row); const b = row.querySelector(".row-approve:not(:disabled)"); if (b) b.focus(); }
  else if (key === "r") { markCurrent(row); if (row.querySelector(".row-reject:not(:disabled)")) showRejectForm(row, ""); }
  else if (key === "e") window.location.href = "/requests/" + encodeURIComponent(row.dataset.id) + "#edit";
  else return false;
  return true;
}

function onRequest(key) {
  const kind = { a: "approve", r: "reject", e: "edit" }[key];
  const tab = kind && document.querySelector('.tab[data-kind="' + kind + '"]');
  if (!tab) return false;
  tab.click();
  const target = kind === "reject" ? document.querySelector('#decision-form textarea[name="message"]')
    : kind === "edit" ? document.querySelector("#edit-fields input, #edit-fields select, #edit-fields textarea")
    : document.getElementById("decision-submit");
  if (target) target.focus();
  return true;
}

export function setupKeys(page) {
  const keys = document.getElementById("keys");
  if (page === "pending") afterRefresh(() => { const row = currentRow(); if (row) row.classList.add("current"); });
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (event.key === "Escape") { if (typing) event.target.blur(); return; }
    if (typing || !keys) return;
    let handled = true;
    if (event.key === "?") { if (keys.open) keys.close(); else keys.showModal(); }
    else if (keys.open) handled = false;
    else if (event.key === "/" && document.getElementById("search")) focusSearch(document.getElementById("search"));
    else if (page === "pending") handled = onList(event.key);
    else if (page === "request") handled = onRequest(event.key);
    else handled = false;
    if (handled) event.preventDefault();
  });
  if (page === "request" && window.location.hash === "#edit") onRequest("e");
}

// The search may sit in a folded <details> (the pending list on a phone): unfold it, or focus() does nothing.
function focusSearch(search) {
  const fold = search.closest("details");
  if (fold) fold.open = true;
  search.focus();
}
