// Hidden and look-alike characters: the same classes as crossgate.display (keep the two in step).
// Controls, invisible formatting (U+202E, U+200B, ...), line and paragraph separators, lone surrogates;
// fillers and blanks that render as nothing (U+3164, U+2800, U+034F, ...); variation selectors; spaces
// other than the plain one (U+00A0, U+2007, U+202F, ...); and Cyrillic or Greek letters inside a word
// with Latin letters. The page writes them as \u escapes and marks them, so a model cannot disguise an
// argument.

const INVISIBLE = "\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}\\u034f\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f" +
  "\\u2800\\u3164\\uffa0\\ufe00-\\ufe0f\\u{e0100}-\\u{e01ef}\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000";
const SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]/u;
const HIDDEN = new RegExp("[" + INVISIBLE + "]", "u");
// A run of letters (and their marks), or one invisible character: the units the page checks.
const PIECES = new RegExp("[" + INVISIBLE + "]|(?:(?![" + INVISIBLE + "])[\\p{L}\\p{M}])+", "gu");
const LATIN = /\p{Script=Latin}/u;
const FOREIGN = /[\p{Script=Cyrillic}\p{Script=Greek}]/u;
const FOREIGN_ALL = /[\p{Script=Cyrillic}\p{Script=Greek}]/gu;

export function escapeUnits(ch) {
  let out = "";
  for (let i = 0; i < ch.length; i++) out += "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0");
  return out;
}

export function codePoint(ch) {
  return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
}

export function why(ch) {
  if (/\p{Cc}/u.test(ch)) return "control character";
  if (SPACES.test(ch)) return "not a plain space";
  if (/[\p{Script=Cyrillic}]/u.test(ch)) return "Cyrillic letter in a Latin word";
  if (/[\p{Script=Greek}]/u.test(ch)) return "Greek letter in a Latin word";
  return "invisible";
}

// ``text`` cut into plain stretches and flagged characters: [{text, flag}], flag the character or null.
// A line feed is layout, not a flag.
export function segments(text) {
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

export function visibleText(text) {
  return segments(text).map((s) => (s.flag ? escapeUnits(s.flag) : s.text)).join("");
}

export function flagsIn(text) {
  return segments(text).filter((s) => s.flag).map((s) => s.flag);
}

export function hasHidden(value) {
  if (typeof value === "string") return flagsIn(value).length > 0;
  if (Array.isArray(value)) return value.some(hasHidden);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).some(([key, item]) => hasHidden(key) || hasHidden(item));
  }
  return false;
}
