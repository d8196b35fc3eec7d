// The pending list: replaced by the server's fragment on every live update, with hooks that put back
// what the page keeps across updates (selection, an open reject form, the current row, marks).

import { flagsIn } from "./hidden.js";
import { debounce, listen } from "./live.js";
import { showText } from "./show.js";

const hooks = [];

// ``hook`` runs after each live update of the list.
export function afterRefresh(hook) {
  hooks.push(hook);
}

export async function refreshPending() {
  // The same filters as the page (its query string), so a live update keeps the list filtered.
  const response = await fetch("/partials/pending" + window.location.search, { credentials: "same-origin" });
  if (!response.ok) return;
  const holder = document.getElementById("pending");
  holder.outerHTML = await response.text();
  const count = document.getElementById("pending").dataset.count;
  const badge = document.querySelector(".count");
  if (badge) badge.textContent = count;
  document.title = (count === "0" ? "" : "(" + count + ") ") + "Pending · crossgate";
  hooks.forEach((hook) => hook());
}

// The rows are rendered by the server with crossgate.display's escapes; anything hidden.js flags still
// raw in them is marked here, and the row gets the same badge.
function flagRows() {
  document.querySelectorAll("#pending a.req").forEach((row) => {
    let found = false;
    row.querySelectorAll(".tool, code.args").forEach((node) => {
      if (flagsIn(node.textContent).length) { showText(node, node.textContent); found = true; }
    });
    if (found && !row.querySelector(".flag")) {
      const badge = document.createElement("span");
      badge.className = "flag";
      badge.title = "hidden or look-alike characters, shown as \\u escapes";
      badge.textContent = "hidden characters";
      row.querySelector(".tool").after(badge);
    }
  });
}

export function setupPending() {
  const refresh = debounce(refreshPending, 150);
  listen((change) => { if (change.request_id) refresh(); });
  afterRefresh(flagRows);
  flagRows();
}
