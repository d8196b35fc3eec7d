// The pending list's search, filters and batch bar, folded behind one control on a narrow screen.

const NARROW = "(max-width: 640px)";

export function setupTools() {
  const tools = document.getElementById("list-tools");
  if (!tools) return;
  const filtered = new URLSearchParams(location.search).toString() !== "";
  // Folded on a phone so that the first requests fit on the first screen; open while a filter is set.
  const narrow = window.matchMedia(NARROW);
  if (narrow.matches && !filtered) tools.open = false;
  narrow.addEventListener("change", () => { if (!narrow.matches) tools.open = true; }); // wide: no fold to open
  // Ticking a row needs the batch buttons: it unfolds the tools (keys.js unfolds them for "/").
  document.addEventListener("change", (event) => {
    if (event.target.classList && event.target.classList.contains("pick-box") && event.target.checked) tools.open = true;
  });
}
