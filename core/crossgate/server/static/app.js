// crossgate reviewer page: live updates over server-sent events, the decision form, and an
// arguments form generated from the tool's JSON Schema. No build step, no dependencies.
"use strict";

(function () {
  const page = document.body.dataset.page;

  // ---- hidden and look-alike characters -------------------------------------------------------
  // The same classes as crossgate.display (keep the two in step): controls, invisible formatting
  // (U+202E, U+200B, ...), line and paragraph separators, lone surrogates; fillers and blanks that
  // render as nothing (U+3164, U+2800, U+034F, ...); variation selectors; spaces other than the plain
  // one (U+00A0, U+2007, U+202F, ...); and Cyrillic or Greek letters inside a word with Latin letters.
  // The page writes them as \u escapes and marks them, so a model cannot disguise an argument.
  const INVISIBLE = "\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}\\u034f\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f" +
    "\\u2800\\u3164\\uffa0\\ufe00-\\ufe0f\\u{e0100}-\\u{e01ef}\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000";
  const SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/u;
  const HIDDEN = new RegExp("[" + INVISIBLE + "]", "u");
  // A run of letters (and their marks), or one invisible character: the units the page checks.
  const PIECES = new RegExp("[" + INVISIBLE + "]|(?:(?![" + INVISIBLE + "])[\\p{L}\\p{M}])+", "gu");
  const LATIN = /\p{Script=Latin}/u;
  const FOREIGN = /[\p{Script=Cyrillic}\p{Script=Greek}]/u;
  const FOREIGN_ALL = /[\p{Script=Cyrillic}\p{Script=Greek}]/gu;

  function escapeUnits(ch) {
    let out = "";
    for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
    return out;
  }

  function codePoint(ch) {
    return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  }

  function why(ch) {
    if (/\p{Cc}/u.test(ch)) return "control character";
    if (SPACES.test(ch)) return "not a plain space";
    if (/[\p{Script=Cyrillic}]/u.test(ch)) return "Cyrillic letter in a Latin word";
    if (/[\p{Script=Greek}]/u.test(ch)) return "Greek letter in a Latin word";
    return "invisible";
  }

  // ``text`` cut into plain stretches and flagged characters: [{text, flag}], flag the character or null.
  // A line feed is layout, not a flag.
  function segments(text) {
    const out = [];
    let last = 0;
    const plain = (to) => { if (to > last) out.push({ text: text.slice(last, to), flag: null }); };
    for (const match of text.matchAll(PIECES)) {
      const piece = match[0];
      const at = match.index;
      if (HIDDEN.test(piece)) {
        if (piece === "\n") continue;
        plain(at);
        out.push({ text: piece, flag: piece });
        last = at + piece.length;
      } else if (LATIN.test(piece) && FOREIGN.test(piece)) {
        for (const letter of piece.matchAll(FOREIGN_ALL)) {
          plain(at + letter.index);
          out.push({ text: letter[0], flag: letter[0] });
          last = at + letter.index + letter[0].length;
        }
      }
    }
    plain(text.length);
    return out;
  }

  function visibleText(text) {
    return segments(text).map((s) => (s.flag ? escapeUnits(s.flag) : s.text)).join("");
  }

  function flagsIn(text) {
    return segments(text).filter((s) => s.flag).map((s) => s.flag);
  }

  function hasHidden(value) {
    if (typeof value === "string") return flagsIn(value).length > 0;
    if (Array.isArray(value)) return value.some(hasHidden);
    if (value !== null && typeof value === "object") {
      return Object.entries(value).some(([key, item]) => hasHidden(key) || hasHidden(item));
    }
    return false;
  }

  // JSON.stringify(value, null, 2), except that characters JSON.stringify would escape silently
  // (controls) or leave raw (U+3164, ...) are left for visibleText to escape and for showText to mark.
  function jsonText(value, indent) {
    const pad = indent || "";
    const inner = pad + "  ";
    if (typeof value === "string") return quote(value);
    if (Array.isArray(value)) {
      if (!value.length) return "[]";
      return "[\n" + value.map((item) => inner + jsonText(item, inner)).join(",\n") + "\n" + pad + "]";
    }
    if (value !== null && typeof value === "object") {
      const entries = Object.entries(value);
      if (!entries.length) return "{}";
      return "{\n" + entries.map(([k, v]) => inner + quote(k) + ": " + jsonText(v, inner)).join(",\n") + "\n" + pad + "}";
    }
    return JSON.stringify(value);
  }

  function quote(text) {
    const named = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
    return '"' + text.replace(/["\\\n\r\t\b\f]/g, (ch) => named[ch]) + '"';
  }

  // JSON with flagged characters as \u escapes: they show, and JSON.parse gives back the exact value.
  function visibleJson(value) {
    return visibleText(jsonText(value));
  }

  // ``text`` into ``node``: flagged characters as marked \u escapes, each saying what it is.
  function showText(node, text) {
    node.replaceChildren(...segments(text).map((s) => {
      if (!s.flag) return document.createTextNode(s.text);
      const mark = document.createElement("mark");
      mark.className = "hidden-char";
      mark.title = codePoint(s.flag) + ", " + why(s.flag);
      mark.textContent = escapeUnits(s.flag);
      return mark;
    }));
  }

  // ``value`` as JSON into ``node`` for reading: like jsonText, except that a string with line feeds
  // shows as its lines (a block aligned where the value starts), not as one line of \n escapes.
  function showJson(node, value) {
    const out = [];
    const text = (t) => { const span = document.createElement("span"); showText(span, t); out.push(span); };
    function walk(item, pad) {
      const inner = pad + "  ";
      if (typeof item === "string" && item.includes("\n")) {
        const block = document.createElement("span");
        block.className = "text-block";
        showText(block, item);
        out.push(block);
      } else if (Array.isArray(item) && item.length) {
        text("[\n");
        item.forEach((v, i) => { text(inner); walk(v, inner); text(i < item.length - 1 ? ",\n" : "\n"); });
        text(pad + "]");
      } else if (item !== null && typeof item === "object" && !Array.isArray(item) && Object.keys(item).length) {
        const entries = Object.entries(item);
        text("{\n");
        entries.forEach(([k, v], i) => {
          text(inner + quote(k) + ": ");
          walk(v, inner);
          text(i < entries.length - 1 ? ",\n" : "\n");
        });
        text(pad + "}");
      } else {
        text(jsonText(item));
      }
    }
    walk(value, "");
    node.replaceChildren(...out);
  }

  // A notice above the arguments naming each flagged character once.
  function flagNotice(before, texts) {
    const found = [...new Set(texts.flatMap(flagsIn))];
    if (!found.length) return;
    const notice = document.createElement("p");
    notice.className = "notice flagged";
    notice.id = "hidden-notice";
    notice.setAttribute("role", "alert");
    notice.textContent = "This call holds characters that hide or imitate others, marked below as \\u escapes: " +
      found.map((ch) => codePoint(ch) + " (" + why(ch) + ")").join(", ") + ". Check what the call really does.";
    before.parentNode.insertBefore(notice, before);
  }

  // ---- live updates ------------------------------------------------------------------------
  function listen(onChange) {
    if (!window.EventSource) return;
    // Start right after the state this page shows; on reconnect the browser sends Last-Event-ID.
    const head = document.body.dataset.head;
    const source = new EventSource("/api/stream" + (head ? "?after=" + encodeURIComponent(head) : ""));
    source.onmessage = (message) => {
      try { onChange(JSON.parse(message.data)); } catch (err) { console.error(err); }
    };
  }

  function debounce(fn, ms) {
    let timer = null;
    return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
  }

  const listHooks = [];  // run after each live update of the pending list
  const listRefreshed = () => listHooks.forEach((hook) => hook());

  async function refreshPending() {
    // The same filters as the page (its query string), so a live update keeps the list filtered.
    const response = await fetch("/partials/pending" + window.location.search, { credentials: "same-origin" });
    if (!response.ok) return;
    const holder = document.getElementById("pending");
    holder.outerHTML = await response.text();
    const count = document.getElementById("pending").dataset.count;
    const badge = document.querySelector(".count");
    if (badge) badge.textContent = count;
    document.title = (count === "0" ? "" : "(" + count + ") ") + "Pending · crossgate";
    listRefreshed();
  }

  if (page === "pending") {
    const refresh = debounce(refreshPending, 150);
    listen((change) => { if (change.request_id) refresh(); });
  } else if (page === "runs") {
    const reload = debounce(() => window.location.reload(), 400);
    listen((change) => { if (String(change.kind).startsWith("run_")) reload(); });
  } else if (page === "history" || page === "rules") {
    const reload = debounce(() => window.location.reload(), 400);
    listen((change) => {
      if (["decided", "applied", "ran", "not_run", "expired", "cancelled", "rule_added", "rule_revoked"].includes(change.kind)) reload();
    });
  }

  // ---- pending list: flag what the server left raw ---------------------------------------------
  // The rows are rendered by the server with crossgate.display's escapes; anything of the classes
  // above still raw in them is marked here, and the row gets the same badge.
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
  if (page === "pending") { listHooks.push(flagRows); flagRows(); }

  // ---- pending list: batch decisions ---------------------------------------------------------
  const batchForm = document.getElementById("batch");
  if (page === "pending" && batchForm) setupBatch(batchForm);

  function setupBatch(form) {
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
    listHooks.push(sync);

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

  // ---- ages and time left, kept current (the same words as listviews.ago_text and listviews.left_text) -------
  function agoText(seconds) {
    if (seconds < 60) return "just now";
    if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
    if (seconds < 48 * 3600) return Math.floor(seconds / 3600) + " h ago";
    return Math.floor(seconds / 86400) + " d ago";
  }

  function leftText(seconds) {
    if (seconds <= 0) return "expired";
    if (seconds < 3600) return "expires in " + Math.ceil(seconds / 60) + " min";
    if (seconds < 48 * 3600) return "expires in " + Math.ceil(seconds / 3600) + " h";
    return "expires in " + Math.ceil(seconds / 86400) + " d";
  }

  function tick() {
    const now = Date.now();
    document.querySelectorAll("time.ago").forEach((t) => { t.textContent = agoText((now - Date.parse(t.dateTime)) / 1000); });
    document.querySelectorAll("time.left").forEach((t) => { t.textContent = leftText((Date.parse(t.dateTime) - now) / 1000); });
  }
  if (page === "pending") { listHooks.push(tick); setInterval(tick, 30000); }

  // ---- pending list: approve or reject one row ------------------------------------------------
  const rowStatus = document.getElementById("row-status");
  let openReject = null;  // {id, text}: a row's reject form, kept across live updates

  function say(text, failed) {
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

  function showRejectForm(row, text) {
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
      area.addEventListener("input", () => { openReject = { id: row.dataset.id, text: area.value }; });
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
    openReject = { id: row.dataset.id, text: text || "" };
    form.elements.message.focus();
  }

  if (page === "pending") {
    document.addEventListener("click", (event) => {
      const button = event.target.closest ? event.target.closest(".row-approve, .row-reject") : null;
      if (!button || button.disabled) return;
      if (button.classList.contains("row-approve")) decideRow(button, { kind: "approve" });
      else showRejectForm(button.closest(".req-row"), "");
    });
    listHooks.push(() => {  // a live update replaced the rows: put an open reject form back, with its text
      if (!openReject) return;
      const row = document.querySelector('#pending .req-row[data-id="' + CSS.escape(openReject.id) + '"]');
      if (row && row.querySelector(".row-reject:not(:disabled)")) showRejectForm(row, openReject.text); else openReject = null;
    });
  }

  // ---- one request: decisions ----------------------------------------------------------------
  const dataNode = document.getElementById("request-data");
  if (page === "request" && dataNode) {
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

  // ---- arguments editor from JSON Schema -----------------------------------------------------
  function simpleSchema(schema, args) {
    if (!schema || schema.type !== "object" || !schema.properties) return false;
    return Object.keys(args).every((key) => key in schema.properties);
  }

  function buildEditor(holder, schema, args) {
    // A text input would show hidden characters raw; the JSON editor shows them escaped and keeps them exact.
    if (hasHidden(args)) return jsonEditor(holder, schema, args, true);
    return simpleSchema(schema, args) ? schemaEditor(holder, schema, args) : jsonEditor(holder, schema, args, false);
  }

  function field(holder, name, labelText, control, hint) {
    const label = document.createElement("label");
    label.className = "field";
    const title = document.createElement("span");
    title.className = "field-name";
    title.textContent = labelText;
    label.appendChild(title);
    if (hint) {
      const small = document.createElement("span");
      small.className = "muted";
      small.textContent = " " + hint;
      title.appendChild(small);
    }
    label.appendChild(control);
    const error = document.createElement("span");
    error.className = "field-error";
    label.appendChild(error);
    holder.appendChild(label);
    return error;
  }

  function schemaEditor(holder, schema, args) {
    const required = new Set(schema.required || []);
    const inputs = [];
    for (const [name, prop] of Object.entries(schema.properties)) {
      const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
      const current = args[name];
      let control;
      if (Array.isArray(prop.enum)) {
        control = document.createElement("select");
        if (!required.has(name)) control.appendChild(new Option("(leave out)", ""));
        prop.enum.forEach((v) => control.appendChild(new Option(visibleText(String(v)), JSON.stringify(v))));
        if (current !== undefined) control.value = JSON.stringify(current);
      } else if (type === "boolean") {
        // A choice, not a checkbox: an unchecked box would turn an argument the model left out (whose
        // default the tool decides) into an explicit false the moment any other field is edited.
        control = document.createElement("select");
        if (!required.has(name) || current === undefined) control.appendChild(new Option("(leave out)", ""));
        control.appendChild(new Option("true", "true"));
        control.appendChild(new Option("false", "false"));
        control.value = current === undefined ? "" : JSON.stringify(current);
      } else if (type === "integer" || type === "number") {
        control = document.createElement("input");
        control.type = "number";
        control.step = type === "integer" ? "1" : "any";
        if (current !== undefined) control.value = String(current);
      } else if (type === "string") {
        const long = (prop.maxLength || 0) > 200 || (typeof current === "string" && current.length > 60);
        control = document.createElement(long ? "textarea" : "input");
        if (current !== undefined) control.value = current;
      } else {
        control = document.createElement("textarea");
        control.className = "json-input";
        if (current !== undefined) control.value = visibleJson(current);
      }
      control.name = "arg-" + name;
      control.dataset.arg = name;
      const hint = (required.has(name) ? "required" : "optional") + (prop.description ? " · " + prop.description : "");
      const error = field(holder, name, name, control, hint);
      inputs.push({ name, prop, type, control, error, required: required.has(name) });
    }
    return {
      read() {
        const value = {};
        const errors = [];
        for (const input of inputs) {
          input.error.textContent = "";
          const problem = readInput(input, value);
          if (problem) { input.error.textContent = problem; errors.push(input.name + ": " + problem + "."); }
        }
        return { value, errors };
      },
    };
  }

  function readInput(input, out) {
    const { name, prop, type, control } = input;
    if (control.tagName === "SELECT") {  // an enum, or a boolean
      if (control.value === "") return input.required ? "choose a value" : null;
      out[name] = JSON.parse(control.value);
      return null;
    }
    const raw = control.value;
    if (raw === "") {
      if (input.required && type !== "string") return "a value is required";
      if (input.required) { out[name] = ""; return checkValue("", prop); }
      return null;
    }
    let value;
    if (type === "integer" || type === "number") {
      value = Number(raw);
      if (!Number.isFinite(value)) return "not a number";
      if (type === "integer" && !Number.isInteger(value)) return "must be a whole number";
    } else if (type === "string") {
      value = raw;
    } else {
      try { value = JSON.parse(raw); } catch (err) { return "not valid JSON"; }
      if (type === "array" && !Array.isArray(value)) return "must be a JSON array";
      if (type === "object" && (value === null || typeof value !== "object" || Array.isArray(value))) return "must be a JSON object";
    }
    out[name] = value;
    return checkValue(value, prop);
  }

  function checkValue(value, prop) {
    if (typeof value === "string") {
      if (prop.minLength !== undefined && value.length < prop.minLength) return "at least " + prop.minLength + " characters";
      if (prop.maxLength !== undefined && value.length > prop.maxLength) return "at most " + prop.maxLength + " characters";
      if (prop.pattern && !new RegExp(prop.pattern, "u").test(value)) return "must match " + prop.pattern;
    }
    if (typeof value === "number") {
      if (prop.minimum !== undefined && value < prop.minimum) return "at least " + prop.minimum;
      if (prop.maximum !== undefined && value > prop.maximum) return "at most " + prop.maximum;
    }
    return null;
  }

  function jsonEditor(holder, schema, args, hidden) {
    if (hidden) {
      const notice = document.createElement("p");
      notice.className = "notice hidden-chars";
      notice.textContent = "These arguments contain hidden or control characters, shown as \\u escapes. " +
        "The escapes stand for the characters themselves: left as they are, they are sent unchanged.";
      holder.appendChild(notice);
    }
    const area = document.createElement("textarea");
    area.className = "json-input";
    area.name = "args-json";
    area.rows = 8;
    area.value = visibleJson(args);
    const error = field(holder, "args", "Arguments (JSON object)", area, schema ? "checked against the tool's schema on the server" : "");
    return {
      read() {
        error.textContent = "";
        let value;
        try { value = JSON.parse(area.value); } catch (err) {
          error.textContent = "not valid JSON";
          return { value: null, errors: ["The arguments are not valid JSON."] };
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          error.textContent = "must be a JSON object";
          return { value: null, errors: ["The arguments must be a JSON object."] };
        }
        return { value, errors: [] };
      },
    };
  }

  // ---- copy buttons (fingerprint, ids) --------------------------------------------------------
  async function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    const area = document.createElement("textarea");  // plain http on another host: the old way
    area.value = text;
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest ? event.target.closest("button.copy") : null;
    if (!button) return;
    try {
      await copy(button.dataset.copy);
      button.textContent = "Copied";
    } catch (err) {
      button.textContent = "Copy failed";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });

  // ---- keyboard shortcuts: j/k, Enter, a, r, e, /, ? ------------------------------------------
  // A decision by keyboard takes two keys (a, then Enter on the focused Approve), so a stray key
  // decides nothing.
  const keys = document.getElementById("keys");
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
  listHooks.push(() => { const row = currentRow(); if (row) row.classList.add("current"); });

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

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (event.key === "Escape") { if (typing) event.target.blur(); return; }
    if (typing || !keys) return;
    let handled = true;
    if (event.key === "?") { if (keys.open) keys.close(); else keys.showModal(); }
    else if (keys.open) handled = false;
    else if (event.key === "/" && document.getElementById("search")) document.getElementById("search").focus();
    else if (page === "pending") handled = onList(event.key);
    else if (page === "request") handled = onRequest(event.key);
    else handled = false;
    if (handled) event.preventDefault();
  });
  if (page === "request" && window.location.hash === "#edit") onRequest("e");

  // ---- standing rules: revoke ---------------------------------------------------------------
  document.querySelectorAll("button.revoke").forEach((button) => {
    button.addEventListener("click", async () => {
      const row = button.closest("tr");
      const response = await fetch("/api/rules/" + encodeURIComponent(row.dataset.id), {
        method: "DELETE", credentials: "same-origin",
      });
      if (response.ok) window.location.reload();
      else button.textContent = "Failed: " + response.status;
    });
  });
})();
