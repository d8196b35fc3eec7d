// Copy buttons (the fingerprint, ids): the clipboard API where the page is a secure context.

async function copy(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement("textarea");  // plain http on another host: the old way
  area.value = text;
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

export function setupCopy() {
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
}
