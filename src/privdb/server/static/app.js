// privdb's web page: sign in with a token, ask DP-SELECTs, watch the budget; the owner manages analysts.
// Plain DOM, no framework. Server text only ever reaches the page as text nodes (never as HTML).
"use strict";

(() => {
  const { TOKEN_KEY, $, el, svg, fill, authFetch } = window.privdbCommon;
  const MAX_TABLE_ROWS = 500;
  const MAX_CHART_BARS = 60;

  // Key tuples in order: numbers by value, text as people sort it (numeric-aware), NULL last.
  function byKey(a, b) {
    for (let i = 0; i < a.length; i++) {
      const [x, y] = [a[i], b[i]];
      if (x === y) continue;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      if (typeof x === "number" && typeof y === "number") return x - y;
      const c = String(x).localeCompare(String(y), undefined, { numeric: true });
      if (c) return c;
    }
    return 0;
  }

  const LOG_PAGE = 50; // log entries per page: the page stays short however long the log grows
  const TITLES = {
    budget_exhausted: "Refused: not enough budget left.",
    unauthorized: "Not signed in.",
    forbidden: "Not allowed.",
    raw_access_denied: "Not allowed.",
    parse_error: "The query does not parse.",
    unsupported_query: "Not supported.",
    unknown_table: "Unknown table.",
    unknown_column: "Unknown column.",
    invalid_parameter: "Invalid query.",
    network_error: "No connection.",
  };

  const state = { token: null, role: null, tables: [], result: null, logOffset: {} };

  // A table head; `numeric` names the right-aligned columns.
  const thead = (names, numeric = () => false) =>
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        names.map((h) => el("th", { scope: "col", class: numeric(h) ? "num" : null }, h)),
      ),
    );

  // ---- formatting
  function fmt(x) {
    if (typeof x !== "number") return x === null || x === undefined ? "—" : String(x);
    if (!Number.isFinite(x)) return String(x);
    const a = Math.abs(x);
    const digits = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 1 ? 2 : 4;
    const text = x.toLocaleString("en-US", { maximumFractionDigits: digits });
    return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text; // -0, or a tiny negative rounded to zero
  }
  const fmtEps = (x) => (typeof x === "number" ? String(Number(x.toPrecision(6))) : "—");
  const fmtTime = (t) => new Date(t * 1000).toLocaleString();
  const ident = (name) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);

  // ---- the API
  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // The JSON body of an API call (`api`), or the body with the log's total count (`apiPage`).
  const api = async (method, path, body) => (await request(method, path, body)).data;
  async function apiPage(path) {
    const { data, response } = await request("GET", path);
    return { data, total: Number(response.headers.get("X-Total-Count") || data.length) };
  }

  async function request(method, path, body) {
    let response;
    try {
      response = await authFetch(path, { method, body, token: state.token });
    } catch (err) {
      throw new ApiError(0, "network_error", `the server cannot be reached (${err.message})`);
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (!response.ok) {
      const e = (data && data.error) || {};
      throw new ApiError(response.status, e.code || `http_${response.status}`, e.message || response.statusText);
    }
    return { data, response };
  }

  // ---- messages
  function showError(err) {
    const code = err.code || "error";
    const [first, ...rest] = (err.message || String(err)).split("\n");
    const box = $("message");
    fill(
      box,
      el("strong", {}, TITLES[code] || "Error."),
      " ",
      el("span", { "data-testid": "message-text" }, first),
      " ",
      el("code", { class: "code", "data-testid": "message-code" }, code),
      rest.length ? el("pre", {}, rest.join("\n")) : null,
    );
    box.dataset.code = code;
    box.hidden = false;
  }
  function clearMessage() {
    $("message").hidden = true;
    $("message").replaceChildren();
    delete $("message").dataset.code;
  }
  const say = (text) => {
    $("status").textContent = text;
  };

  async function busy(form, work) {
    const buttons = form ? [...form.querySelectorAll("button")] : [];
    buttons.forEach((b) => (b.disabled = true));
    if (form) form.setAttribute("aria-busy", "true");
    try {
      return await work();
    } finally {
      buttons.forEach((b) => (b.disabled = false));
      if (form) form.removeAttribute("aria-busy");
    }
  }

  // ---- signing in and out
  async function signIn(token) {
    state.token = token;
    try {
      await api("GET", "/v1/analysts");
      state.role = "owner";
    } catch (err) {
      if (err.status !== 403) {
        state.token = null;
        sessionStorage.removeItem(TOKEN_KEY);
        throw err;
      }
      state.role = "analyst";
    }
    sessionStorage.setItem(TOKEN_KEY, token);
    say(""); // a "Signed out." from before is stale now
    $("signin-view").hidden = true;
    $("sign-out").hidden = false;
    $("token").value = "";
    if (state.role === "owner") {
      $("owner-view").hidden = false;
      fill($("who"), "Signed in as ", el("strong", {}, "the owner"));
      $("who").hidden = false;
      await loadOwner();
    } else {
      $("analyst-view").hidden = false;
      await loadAnalyst();
      $("sql").focus();
    }
    document.dispatchEvent(new CustomEvent("privdb:signed-in")); // surveys.js shows the surveys
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    Object.assign(state, { token: null, role: null, tables: [], result: null, logOffset: {} });
    for (const id of [
      "analyst-view",
      "owner-view",
      "explain-panel",
      "result-panel",
      "new-token",
      "who",
      "sign-out",
    ]) {
      $(id).hidden = true;
    }
    for (const id of ["budget", "tables", "history", "analysts", "log", "owner-tables", "shared", "chart", "result-table"]) {
      $(id).replaceChildren();
    }
    $("sql").value = "";
    clearMessage();
    say("Signed out.");
    document.dispatchEvent(new CustomEvent("privdb:signed-out"));
    $("signin-view").hidden = false;
    $("token").focus();
  }

  // ---- the analyst's view
  async function loadAnalyst() {
    const [budget, tables] = await Promise.all([api("GET", "/v1/budget"), api("GET", "/v1/tables")]);
    state.tables = tables;
    fill(
      $("who"),
      "Signed in as ",
      el("strong", { "data-testid": "who-name" }, budget.analyst),
      ` (analyst) on ${budget.database}`,
    );
    $("who").hidden = false;
    renderBudget(budget);
    renderTables($("tables"), tables);
    if (!$("sql").value.trim()) $("sql").value = exampleQuery(tables);
    await refreshHistory();
  }

  async function refreshAnalyst() {
    state.logOffset.history = 0; // back to the newest entries, where the query just asked is
    const [budget] = await Promise.all([api("GET", "/v1/budget"), refreshHistory()]);
    renderBudget(budget);
  }

  const refreshHistory = () => showLogPage("history", false);

  function exampleQuery(tables) {
    const table = tables[0];
    if (!table) return "";
    const columns = Object.entries(table.columns || {});
    const key = columns.find(([, c]) => Array.isArray(c.values) && c.values.length <= 12);
    const num = columns.find(([, c]) => c.lower !== undefined && c.upper !== undefined && !c.private_id);
    const select = [];
    if (key) select.push(ident(key[0]));
    select.push("COUNT(*) AS n");
    if (num) select.push(`AVG(${ident(num[0])}) AS avg_${num[0].replace(/\W/g, "_")}`);
    return `DP-SELECT 0.1 ${select.join(", ")} FROM ${ident(table.name)}${key ? ` GROUP BY ${ident(key[0])}` : ""}`;
  }

  function renderBudget(b) {
    const total = b.epsilon_total;
    const left = Math.max(0, b.epsilon_remaining);
    fill(
      $("budget"),
      el(
        "p",
        { class: "gauge-figure" },
        el("span", { class: "big", "data-testid": "epsilon-remaining" }, fmtEps(left)),
        el("span", {}, " ε left of "),
        el("span", { "data-testid": "epsilon-total" }, fmtEps(total)),
      ),
      el("meter", {
        id: "budget-meter",
        "data-testid": "budget-meter",
        min: 0,
        max: total > 0 ? total : 1,
        value: left,
        low: total * 0.2,
        high: total * 0.5,
        optimum: total,
        "aria-label": `Privacy budget: ε ${fmtEps(left)} left of ${fmtEps(total)}`,
      }),
      el(
        "p",
        { class: "help" },
        `Spent ε ${fmtEps(b.epsilon_spent)}` +
          (b.delta_total > 0 ? ` · δ ${fmtEps(b.delta_remaining)} left of ${fmtEps(b.delta_total)}` : ""),
      ),
    );
  }

  function domainText(c) {
    if (c.private_id) return "private id (never released)";
    if (c.identifier) return "identifier (never released)";
    if (Array.isArray(c.values)) {
      const shown = c.values.slice(0, 8).map(String).join(", ");
      return c.values.length > 8 ? `${shown}, … (${c.values.length} values)` : shown;
    }
    if (c.lower !== undefined && c.upper !== undefined) return `${fmt(c.lower)} to ${fmt(c.upper)}`;
    return "no public bounds";
  }

  function renderTables(container, tables) {
    if (!tables.length) {
      fill(container, el("p", { class: "help" }, "No tables."));
      return;
    }
    fill(
      container,
      ...tables.map((t, i) => {
        const notes = [];
        if (t.privacy_unit) notes.push(`privacy unit: ${t.privacy_unit}`);
        if (t.max_contributions) notes.push(`≤ ${t.max_contributions} row(s) per unit`);
        return el(
          "details",
          { open: i === 0, "data-testid": "table-info", "data-name": t.name },
          el(
            "summary",
            {},
            el("strong", {}, t.name),
            notes.length ? el("span", { class: "help" }, ` — ${notes.join(", ")}`) : null,
          ),
          el(
            "table",
            { class: "compact" },
            thead(["Column", "Type", "Bounds or domain"]),
            el(
              "tbody",
              {},
              Object.entries(t.columns || {}).map(([name, c]) =>
                el(
                  "tr",
                  {},
                  el("th", { scope: "row" }, el("code", {}, name)),
                  el("td", {}, c.type || ""),
                  el("td", {}, domainText(c)),
                ),
              ),
            ),
          ),
        );
      }),
    );
  }

  async function explain() {
    const sql = $("sql").value.trim();
    if (!sql) return;
    clearMessage();
    await busy($("query-form"), async () => {
      try {
        const plan = await api("POST", "/v1/explain", { sql });
        renderExplain(plan);
        say(`Explained: this query would cost ε ${fmtEps(plan.epsilon)}; nothing was spent.`);
      } catch (err) {
        $("explain-panel").hidden = true;
        say("");
        showError(err);
      }
    });
  }

  // One row per output column (plan.columns): its mechanism, ε and share, and the 95 % ± in the answer's
  // units; a ratio's ± depends on the private group size, so it is stated at public sizes (ci95_half_width_at).
  function accuracyCell(c) {
    if (c.ci95_half_width !== null && c.ci95_half_width !== undefined)
      return c.role === "key" ? "exact" : `±${fmt(c.ci95_half_width)}`;
    if (c.ci95_half_width_at)
      return Object.entries(c.ci95_half_width_at)
        .map(([n, w]) => `±${fmt(w)} at n = ${Number(n).toLocaleString()}`)
        .join(" · ");
    return c.note || "";
  }

  function renderExplain(plan) {
    const rows = [];
    if (plan.columns) {
      for (const c of plan.columns) {
        const share = c.epsilon_share ? ` (${Math.round(c.epsilon_share * 100)} %)` : "";
        rows.push(
          el(
            "tr",
            {},
            el("th", { scope: "row" }, el("code", {}, c.column)),
            el("td", {}, c.mechanism || ""),
            el("td", { class: "num" }, c.epsilon ? `${fmtEps(c.epsilon)}${share}` : "0"),
            el("td", { class: "num", title: c.note || "" }, accuracyCell(c)),
          ),
        );
      }
    }
    const byStat = new Map((plan.statistics || []).map((s) => [s.statistic, s]));
    for (const a of plan.columns ? [] : plan.aggregates || []) {
      const stats = (a.statistics || []).map((s) => byStat.get(s)).filter(Boolean);
      rows.push(
        el(
          "tr",
          {},
          el("th", { scope: "row" }, el("code", {}, a.column)),
          el("td", {}, [...new Set(stats.map((s) => s.mechanism))].join(", ")),
          el("td", { class: "num" }, fmtEps(a.epsilon)),
          el("td", { class: "num" }, stats.map((s) => `±${fmt(s.ci95_half_width)}`).join(" / ")),
        ),
      );
    }
    for (const r of plan.columns ? [] : plan.release || []) {
      rows.push(
        el(
          "tr",
          {},
          el("th", { scope: "row" }, el("code", {}, r.column)),
          el("td", {}, r.mechanism),
          el("td", { class: "num" }, fmtEps(r.epsilon)),
          el("td", {}, ""),
        ),
      );
    }
    const facts = [];
    if (plan.keys) facts.push(`keys: ${plan.keys}`);
    if (plan.groups_released !== null && plan.groups_released !== undefined)
      facts.push(`groups released: ${plan.groups_released}`);
    if (plan.privacy_unit) facts.push(`privacy unit: ${plan.privacy_unit}`);
    fill(
      $("explain-body"),
      el(
        "p",
        { class: "cost", "data-testid": "explain-cost" },
        "Would cost ",
        el("strong", {}, `ε ${fmtEps(plan.epsilon)}`),
        plan.delta ? ` and δ ${fmtEps(plan.delta)}` : "",
        " — explaining spends nothing.",
      ),
      rows.length
        ? el(
            "div",
            { class: "scroll" },
            el(
              "table",
              { class: "compact" },
              thead(["Output", "Mechanism", "ε (share)", "95 % ± in the answer's units"], (h) => h !== "Output" && h !== "Mechanism"),
              el("tbody", {}, rows),
            ),
          )
        : null,
      facts.length ? el("p", { class: "help" }, facts.join(" · ")) : null,
      plan.engine_sql
        ? el("details", {}, el("summary", {}, "SQL the engine runs"), el("pre", {}, plan.engine_sql))
        : null,
    );
    $("explain-panel").hidden = false;
  }

  async function run() {
    const sql = $("sql").value.trim();
    if (!sql) return;
    clearMessage();
    await busy($("query-form"), async () => {
      try {
        const res = await api("POST", "/v1/query", { sql });
        $("explain-panel").hidden = true;
        renderResult(res);
        say(`Answered: spent ε ${fmtEps(res.epsilon_spent)}; ε ${fmtEps(res.budget.epsilon_remaining)} left.`);
      } catch (err) {
        $("result-panel").hidden = true;
        $("explain-panel").hidden = true;
        say("");
        showError(err);
      }
      try {
        await refreshAnalyst();
      } catch (err) {
        showError(err);
      }
    });
  }

  function renderResult(res) {
    const withRows = new Map(
      (res.accuracy || []).filter((a) => Array.isArray(a.ci95_rows)).map((a) => [a.column, a]),
    );
    const shown = res.rows.slice(0, MAX_TABLE_ROWS);
    fill(
      $("result-cost"),
      "Cost ",
      el("strong", { "data-testid": "epsilon-spent" }, `ε ${fmtEps(res.epsilon_spent)}`),
      res.delta_spent ? ` and δ ${fmtEps(res.delta_spent)}` : "",
      ` · ε ${fmtEps(res.budget.epsilon_remaining)} left`,
      res.cached ? " · a repeated query: the earlier answer again, at no cost" : "",
    );
    fill(
      $("result-table"),
      el("caption", { class: "visually-hidden" }, "Answer, with the 95 % interval of each noisy value"),
      thead(res.columns, (c) => withRows.has(c)),
      el(
        "tbody",
        {},
        shown.map((row, i) =>
          el(
            "tr",
            { "data-testid": "result-row" },
            row.map((v, j) => {
              const acc = withRows.get(res.columns[j]);
              const ci = acc && acc.ci95_rows[i];
              return el(
                "td",
                { class: typeof v === "number" ? "num" : null },
                fmt(v),
                ci
                  ? el("span", { class: "ci", "data-testid": "ci" }, `95 % CI ${fmt(ci[0])} to ${fmt(ci[1])}`)
                  : null,
              );
            }),
          ),
        ),
      ),
    );
    const notes = [];
    if (res.rows.length > shown.length) notes.push(`Showing the first ${shown.length} of ${res.rows.length} rows.`);
    for (const a of res.accuracy || []) {
      if (withRows.has(a.column)) continue;
      const width = a.half_width95 !== undefined ? `, ±${fmt(a.half_width95)} at 95 %` : "";
      notes.push(`${a.column}: randomised by ${a.mechanism}${width}.`);
    }
    if (res.guarantee) notes.push(`Guarantee: ${res.guarantee}.`);
    $("result-note").textContent = notes.join(" ");
    renderChart(res, withRows);
    state.result = res;
    $("result-panel").hidden = false;
  }

  // ---- the answer as CSV: the columns of `privdb query --format csv`, each column with intervals followed by
  // <col>_ci95_low and <col>_ci95_high (empty where no interval follows)
  function csvCell(v) {
    const text = v === null || v === undefined || (typeof v === "number" && !Number.isFinite(v)) ? "" : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  }

  function toCsv(res) {
    const ci = new Map(
      (res.accuracy || [])
        .filter((a) => Array.isArray(a.ci95_rows) && res.columns.includes(a.column))
        .map((a) => [a.column, a.ci95_rows]),
    );
    const head = res.columns.flatMap((c) => (ci.has(c) ? [c, `${c}_ci95_low`, `${c}_ci95_high`] : [c]));
    const rows = res.rows.map((row, i) =>
      res.columns.flatMap((c, j) => (ci.has(c) ? [row[j], ...(ci.get(c)[i] || [null, null])] : [row[j]])),
    );
    return [head, ...rows].map((line) => line.map(csvCell).join(",") + "\n").join("");
  }

  function downloadCsv() {
    if (!state.result) return;
    const link = el("a", {
      href: URL.createObjectURL(new Blob([toCsv(state.result)], { type: "text/csv" })),
      download: "privdb-answer.csv",
    });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 0);
  }

  // ---- the bar chart: the first noisy aggregate per group, with its 95 % interval as an error bar. Only a
  // grouped answer (or a lone statistic) is charted: statistics of one row have no common axis.
  function niceTicks(lo, hi, count) {
    const raw = (hi - lo) / count;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const r = raw / mag;
    const step = (r >= 7.5 ? 10 : r >= 3.5 ? 5 : r >= 1.5 ? 2 : 1) * mag;
    const ticks = [];
    // whole multiples of the step, never a running sum (0.1 + 0.1 + … drifts to -5.6e-17, shown as "-0")
    for (let k = Math.floor(lo / step); k <= Math.ceil(hi / step); k++) {
      ticks.push(Number((k * step).toPrecision(12)) || 0); // || 0: -0 becomes 0
    }
    return ticks;
  }

  function renderChart(res, withRows) {
    const box = $("chart");
    box.replaceChildren();
    box.hidden = true;
    const acc = withRows.values().next().value;
    if (!acc) return;
    const vi = res.columns.indexOf(acc.column);
    const noisy = new Set((res.accuracy || []).map((a) => a.column)); // every released statistic
    const keys = res.columns.map((c, i) => i).filter((i) => !noisy.has(res.columns[i])); // the GROUP BY keys
    if (!keys.length && res.columns.length > 1) return;
    const data = res.rows
      .slice(0, MAX_CHART_BARS)
      .map((row, i) => ({
        label: keys.length ? keys.map((k) => String(row[k])).join(" · ") : "all rows",
        key: keys.map((k) => row[k]),
        value: row[vi],
        lo: acc.ci95_rows[i][0],
        hi: acc.ci95_rows[i][1],
      }))
      .filter((d) => [d.value, d.lo, d.hi].every(Number.isFinite))
      .sort((a, b) => byKey(a.key, b.key)); // bins in key order (an age histogram by age), not by count
    if (!data.length) return;

    let lo = Math.min(0, ...data.map((d) => Math.min(d.value, d.lo)));
    let hi = Math.max(0, ...data.map((d) => Math.max(d.value, d.hi)));
    if (hi === lo) hi = lo + 1;
    const ticks = niceTicks(lo, hi, 5);
    [lo, hi] = [ticks[0], ticks[ticks.length - 1]];

    const slanted = data.length > 8 || data.some((d) => d.label.length > 10);
    const short = (label) => (label.length > 14 ? `${label.slice(0, 13)}…` : label);
    const W = 640,
      H = 300;
    const m = { top: 12, right: 12, bottom: slanted ? 92 : 52, left: 76 };
    const pw = W - m.left - m.right,
      ph = H - m.top - m.bottom;
    const y = (v) => m.top + ph - ((v - lo) / (hi - lo)) * ph;
    const band = pw / data.length;
    const barW = Math.max(2, Math.min(72, band * 0.6));
    const cx = (i) => m.left + band * (i + 0.5);
    const xTitle = keys.map((k) => res.columns[k]).join(", ");
    const title = `${acc.column}${xTitle ? ` by ${xTitle}` : ""}, with 95 % intervals`;
    const desc = data
      .map((d) => `${d.label}: ${fmt(d.value)} (95 % interval ${fmt(d.lo)} to ${fmt(d.hi)})`)
      .join("; ");

    const chart = svg(
      "svg",
      {
        viewBox: `0 0 ${W} ${H}`,
        role: "img",
        "aria-labelledby": "chart-title chart-desc",
        "data-testid": "chart-svg",
        class: "bars",
      },
      svg("title", { id: "chart-title" }, title),
      svg("desc", { id: "chart-desc" }, desc),
      svg(
        "g",
        { class: "grid", "aria-hidden": "true" },
        ticks.map((t) => [
          svg("line", { x1: m.left, x2: W - m.right, y1: y(t), y2: y(t) }),
          svg("text", { x: m.left - 8, y: y(t), dy: "0.32em", "text-anchor": "end" }, fmt(t)),
        ]),
      ),
      data.map((d, i) => {
        const top = Math.min(y(d.value), y(0));
        return svg(
          "g",
          { class: "bar", "data-testid": "chart-bar" },
          svg("title", {}, `${d.label}: ${fmt(d.value)}, 95 % interval ${fmt(d.lo)} to ${fmt(d.hi)}`),
          svg("rect", { x: cx(i) - barW / 2, y: top, width: barW, height: Math.max(1, Math.abs(y(d.value) - y(0))) }),
        );
      }),
      data.map((d, i) => {
        const cap = Math.min(10, barW / 3);
        return svg(
          "g",
          { class: "errorbar", "data-testid": "chart-errorbar", "aria-hidden": "true" },
          svg("line", { x1: cx(i), x2: cx(i), y1: y(d.lo), y2: y(d.hi) }),
          svg("line", { x1: cx(i) - cap, x2: cx(i) + cap, y1: y(d.lo), y2: y(d.lo) }),
          svg("line", { x1: cx(i) - cap, x2: cx(i) + cap, y1: y(d.hi), y2: y(d.hi) }),
        );
      }),
      svg("line", { class: "axis", x1: m.left, x2: W - m.right, y1: y(0), y2: y(0), "aria-hidden": "true" }),
      svg(
        "g",
        { class: "xlabels", "aria-hidden": "true" },
        data.map((d, i) =>
          slanted
            ? svg(
                "text",
                {
                  transform: `translate(${cx(i)},${m.top + ph + 12}) rotate(${band < 20 ? -90 : -40})`,
                  "text-anchor": "end",
                  dy: "0.32em",
                },
                short(d.label),
              )
            : svg("text", { x: cx(i), y: m.top + ph + 18, "text-anchor": "middle" }, short(d.label)),
        ),
      ),
      xTitle
        ? svg(
            "text",
            { class: "axis-title", x: m.left + pw / 2, y: H - 6, "text-anchor": "middle", "aria-hidden": "true" },
            xTitle,
          )
        : null,
      svg(
        "text",
        {
          class: "axis-title",
          transform: `translate(16,${m.top + ph / 2}) rotate(-90)`,
          "text-anchor": "middle",
          "aria-hidden": "true",
        },
        acc.column,
      ),
    );
    const note = res.rows.length > data.length ? ` (first ${data.length} rows)` : "";
    box.append(
      el(
        "figure",
        {},
        chart,
        el(
          "figcaption",
          { class: "help" },
          `${title}${note}: bars are the noisy answers; whiskers their 95 % intervals.`,
        ),
      ),
    );
    box.hidden = false;
  }

  // ---- the log (an analyst's own history, or everyone's for the owner), newest first, a page at a time
  async function showLogPage(id, everyone) {
    const offset = state.logOffset[id] || 0;
    const { data, total } = await apiPage(`/v1/log?order=desc&limit=${LOG_PAGE}&offset=${offset}`);
    renderLog($(id), data, everyone);
    const pager = $(`${id}-pager`);
    pager.hidden = total <= LOG_PAGE && offset === 0;
    const turn = (to) => () => {
      state.logOffset[id] = to;
      showLogPage(id, everyone).catch(showError);
    };
    const button = (label, testid, disabled, to) =>
      el("button", { type: "button", class: "secondary", "data-testid": testid, disabled, onclick: turn(to) }, label);
    const range = data.length ? `${fmt(offset + 1)}–${fmt(offset + data.length)} of ${fmt(total)}` : `0 of ${fmt(total)}`;
    fill(
      pager,
      button("Newer", "newer", offset === 0, Math.max(0, offset - LOG_PAGE)),
      el("span", { "data-testid": "page-range", "aria-live": "polite" }, range),
      button("Older", "older", offset + data.length >= total, offset + LOG_PAGE),
    );
  }

  function renderLog(table, recent, everyone) {
    if (!recent.length) {
      fill(table, el("caption", { class: "help" }, "No queries yet."));
      return;
    }
    const heads = ["Time", ...(everyone ? ["Analyst"] : []), "Query", "ε", "δ", "Outcome"];
    fill(
      table,
      thead(heads, (h) => h === "ε" || h === "δ"),
      el(
        "tbody",
        {},
        recent.map((e) =>
          el(
            "tr",
            { "data-testid": "log-row", "data-outcome": e.outcome },
            el("td", { class: "nowrap" }, fmtTime(e.time)),
            everyone ? el("td", {}, e.analyst) : null,
            el("td", {}, el("code", { class: "query" }, e.query)),
            el("td", { class: "num" }, fmtEps(e.epsilon)),
            el("td", { class: "num" }, fmtEps(e.delta)),
            el(
              "td",
              {},
              el("span", { class: `badge ${e.outcome}` }, e.outcome),
              e.code ? el("span", { class: "help" }, ` ${e.code}`) : null,
            ),
          ),
        ),
      ),
    );
  }

  // ---- the owner's view
  async function loadOwner() {
    const [analysts, tables, shared] = await Promise.all([
      api("GET", "/v1/analysts"),
      api("GET", "/v1/tables"),
      api("GET", "/v1/budgets"),
      showLogPage("log", true),
    ]);
    state.tables = tables;
    renderShared(shared);
    renderAnalysts(analysts);
    renderTables($("owner-tables"), tables);
    renderTableChoices(tables);
  }

  // Table lifetime budgets and budget groups: what every analyst (or a team) has drawn together.
  function renderShared(shared) {
    $("shared-section").hidden = !shared.length;
    fill(
      $("shared"),
      thead(["Kind", "Name", "ε drawn / total", "δ drawn / total", "Renews", "Members"]),
      el(
        "tbody",
        {},
        shared.map((b) =>
          el(
            "tr",
            { "data-testid": "shared-row" },
            el("td", {}, b.kind),
            el("th", { scope: "row" }, b.name),
            el("td", { class: "num" }, `${fmtEps(b.epsilon_spent)} / ${fmtEps(b.epsilon_total)}`),
            el("td", { class: "num" }, `${fmtEps(b.delta_spent)} / ${fmtEps(b.delta_total)}`),
            el(
              "td",
              b.renew ? { title: b.warning } : {},
              b.renew ? `every ${b.renew} (next ${new Date(b.refills_at * 1000).toLocaleString()})` : "never",
            ),
            el("td", {}, (b.members || []).join(", ")),
          ),
        ),
      ),
    );
  }

  function renderAnalysts(analysts) {
    if (!analysts.length) {
      fill($("analysts"), el("caption", { class: "help" }, "No analysts yet: create one below."));
      return;
    }
    const heads = ["Name", "Status", "Tables", "ε spent / total", "δ spent / total", ""];
    fill(
      $("analysts"),
      thead(heads),
      el(
        "tbody",
        {},
        analysts.map((a) => {
          const b = a.budget;
          const status = a.revoked ? "revoked" : a.expires && a.expires * 1000 < Date.now() ? "expired" : "active";
          return el(
            "tr",
            { "data-testid": "analyst-row", "data-name": a.name },
            el("th", { scope: "row" }, a.name),
            el(
              "td",
              {},
              el("span", { class: `badge ${status}` }, status),
              a.expires && status === "active" ? el("span", { class: "help" }, ` until ${fmtTime(a.expires)}`) : null,
            ),
            el("td", {}, a.tables ? a.tables.join(", ") : "all"),
            el(
              "td",
              { class: "spend" },
              el("span", { "data-testid": "analyst-spent" }, fmtEps(b.epsilon_spent)),
              ` / ${fmtEps(b.epsilon_total)} `,
              el("meter", {
                min: 0,
                max: b.epsilon_total > 0 ? b.epsilon_total : 1,
                value: b.epsilon_spent,
                high: b.epsilon_total * 0.8,
                optimum: 0,
                "aria-label": `${a.name} has spent ε ${fmtEps(b.epsilon_spent)} of ${fmtEps(b.epsilon_total)}`,
              }),
            ),
            el("td", {}, `${fmtEps(b.delta_spent)} / ${fmtEps(b.delta_total)}`),
            el(
              "td",
              {},
              a.revoked
                ? null
                : el(
                    "button",
                    {
                      type: "button",
                      class: "secondary danger",
                      "data-testid": "revoke",
                      onclick: () => revoke(a.name),
                    },
                    "Revoke",
                    el("span", { class: "visually-hidden" }, ` ${a.name}`),
                  ),
            ),
          );
        }),
      ),
    );
  }

  function renderTableChoices(tables) {
    const fieldset = $("grant-tables");
    fill(
      fieldset,
      el("legend", {}, "Tables (none ticked: all tables)"),
      tables.map((t) =>
        el(
          "label",
          { class: "check" },
          el("input", { type: "checkbox", name: "tables", value: t.name }),
          ` ${t.name}`,
        ),
      ),
    );
  }

  async function grant(event) {
    event.preventDefault();
    const form = event.currentTarget;
    clearMessage();
    const tables = [...form.querySelectorAll("input[name=tables]:checked")].map((c) => c.value);
    const body = {
      name: form.elements.name.value.trim(),
      epsilon: Number(form.elements.epsilon.value),
      delta: Number(form.elements.delta.value),
    };
    if (tables.length) body.tables = tables;
    await busy(form, async () => {
      try {
        const made = await api("POST", "/v1/analysts", body);
        $("new-token-title").textContent =
          `Analyst ${made.name} can now spend ε ${fmtEps(made.budget.epsilon_total)}.`;
        $("new-token-value").textContent = made.token;
        $("new-token").hidden = false;
        form.reset();
        say(`Created analyst ${made.name}.`);
        await loadOwner();
      } catch (err) {
        showError(err);
      }
    });
  }

  async function revoke(name) {
    if (!window.confirm(`Revoke ${name}'s token? They will no longer be able to query.`)) return;
    clearMessage();
    $("new-token").hidden = true;
    try {
      await api("DELETE", `/v1/analysts/${encodeURIComponent(name)}`);
      say(`Revoked ${name}.`);
      await loadOwner();
    } catch (err) {
      showError(err);
    }
  }

  // For the page's tests and the browser console: the pure helpers, read-only.
  window.privdbPage = Object.freeze({ byKey, fmt, niceTicks, toCsv });

  // ---- wiring
  document.addEventListener("DOMContentLoaded", () => {
    $("signin-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      clearMessage();
      const token = $("token").value.trim();
      if (!token) return;
      await busy($("signin-form"), () => signIn(token).catch(showError));
    });
    $("sign-out").addEventListener("click", signOut);
    $("query-form").addEventListener("submit", (event) => {
      event.preventDefault();
      run();
    });
    $("explain").addEventListener("click", explain);
    $("download-csv").addEventListener("click", downloadCsv);
    $("sql").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        run();
      }
    });
    $("grant-form").addEventListener("submit", grant);
    $("owner-refresh").addEventListener("click", () => loadOwner().catch(showError));
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) signIn(saved).catch(showError);
  });
})();
