// privdb's web page: the owner publishes DP marginals of a table (POST /v1/publish, method "histogram").
// Shown inside the owner's view only (app.js unhides it for an owner token); the server refuses anyone else.
// Each release is charged to the table's lifetime budget; errors come back as one message, nothing spent.
(() => {
  "use strict";

  const { $, el, authFetch } = window.privdbCommon;

  const fmt = (x) => (typeof x === "number" ? x.toLocaleString(undefined, { maximumFractionDigits: 1 }) : String(x));

  async function post(body) {
    const response = await authFetch("/v1/publish", { method: "POST", body });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error ? data.error.message : `publishing failed (${response.status})`);
    return data;
  }

  function csv(found) {
    const quote = (v) => (v === null ? "" : /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
    const lines = [found.columns.map(quote).join(","), ...found.rows.map((r) => r.map(quote).join(","))];
    return new Blob([lines.join("\n") + "\n"], { type: "text/csv" });
  }

  function render(found) {
    const shown = found.rows.slice(0, 200);
    const table = el(
      "table",
      { class: "compact", "data-testid": "publish-table" },
      el("thead", {}, el("tr", {}, found.columns.map((c) => el("th", { scope: "col" }, c)))),
      el(
        "tbody",
        {},
        shown.map((r) => el("tr", { "data-testid": "publish-row" }, r.map((v) => el("td", {}, v === null ? "" : fmt(v))))),
      ),
    );
    const link = el("a", { download: `${found.table}-release.csv`, "data-testid": "publish-download" }, "Download CSV");
    link.href = URL.createObjectURL(csv(found));
    const note = el(
      "p",
      { class: "help", "data-testid": "publish-summary" },
      `${found.rows.length} cells of ${found.summary.marginals.join(", ")} · ε ${found.epsilon} charged to ${found.table}`,
      found.rows.length > shown.length ? ` (first ${shown.length} shown)` : "",
    );
    return [note, link, el("div", { class: "scroll" }, table)];
  }

  async function publish(event) {
    event.preventDefault();
    const out = $("publish-result");
    const marginals = $("publish-columns")
      .value.split(";")
      .map((m) => m.split(",").map((c) => c.trim()).filter(Boolean))
      .filter((m) => m.length);
    const body = {
      method: "histogram",
      table: $("publish-table-name").value.trim(),
      options: { columns: marginals, epsilon: Number($("publish-epsilon").value) },
    };
    out.replaceChildren(el("p", { class: "help" }, "Publishing…"));
    try {
      out.replaceChildren(...render(await post(body)));
    } catch (err) {
      out.replaceChildren(el("p", { class: "error", role: "alert", "data-testid": "publish-error" }, err.message));
    }
  }

  document.addEventListener("DOMContentLoaded", () => $("publish-form").addEventListener("submit", publish));
  document.addEventListener("privdb:signed-out", () => $("publish-result").replaceChildren());
})();
