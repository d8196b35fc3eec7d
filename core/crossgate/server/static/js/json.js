// JSON as text for people: indented, with the characters hidden.js flags left for it to escape.

import { visibleText } from "./hidden.js";

// JSON.stringify(value, null, 2), except that characters JSON.stringify would escape silently
// (controls) or leave raw (U+3164, ...) are left for visibleText to escape and for showText to mark.
export function jsonText(value, indent) {
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

export function quote(text) {
  const named = { '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
  return '"' + text.replace(/["\\\n\r\t\b\f]/g, (ch) => named[ch]) + '"';
}

// JSON with flagged characters as \u escapes: they show, and JSON.parse gives back the exact value.
export function visibleJson(value) {
  return visibleText(jsonText(value));
}
