// The standing rules page: revoke a rule.

export function setupRules() {
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
}
