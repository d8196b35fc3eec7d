// Ages and time left in the pending list, kept current: the same words as listviews.ago_text and
// listviews.left_text (keep them in step).

import { afterRefresh } from "./pending.js";

export function agoText(seconds) {
  if (seconds < 60) return "just now";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
  if (seconds < 48 * 3600) return Math.floor(seconds / 3600) + " h ago";
  return Math.floor(seconds / 86400) + " d ago";
}

export function leftText(seconds) {
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

export function setupTimes() {
  afterRefresh(tick);
  setInterval(tick, 30000);
}
