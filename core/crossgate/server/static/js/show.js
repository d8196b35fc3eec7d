// Text and JSON into the page, flagged characters marked: what a reviewer reads of a call.

import { codePoint, escapeUnits, flagsIn, segments, why } from "./hidden.js";
import { jsonText, quote } from "./json.js";

// ``text`` into ``node``: flagged characters as marked \u escapes, each saying what it is.
export function showText(node, text) {
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
export function showJson(node, value) {
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
export function flagNotice(before, texts) {
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
