// Live updates: one summary per logged event over server-sent events (see docs/server.md, Live stream).

export function listen(onChange) {
  if (!window.EventSource) return;
  // Start right after the state this page shows; on reconnect the browser sends Last-Event-ID.
  const head = document.body.dataset.head;
  const source = new EventSource("/api/stream" + (head ? "?after=" + encodeURIComponent(head) : ""));
  source.onmessage = (message) => {
    try { onChange(JSON.parse(message.data)); } catch (err) { console.error(err); }
  };
}

export function debounce(fn, ms) {
  let timer = null;
  return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
}

// Reload the page (once for a burst) when an event of one of ``kinds`` comes in.
export function reloadOn(kinds) {
  const reload = debounce(() => window.location.reload(), 400);
  listen((change) => { if (kinds(String(change.kind))) reload(); });
}
