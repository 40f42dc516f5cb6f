// privdb's web page: the local model's surveys (GET /v1/surveys, GET /v1/surveys/{name}), for whoever is signed
// in. Every estimate comes from randomised responses only; each answer's share is drawn with its 95 % interval.
// app.js announces signing in and out with the events "privdb:signed-in" and "privdb:signed-out".
(() => {
  "use strict";

  const { $, el, svg, authFetch } = window.privdbCommon;

  async function get(path) {
    const response = await authFetch(path);
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    return response.json();
  }

  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const num = (x) => x.toLocaleString(undefined, { maximumFractionDigits: 1 });

  // Shares as horizontal bars on 0..100 %, each with its 95 % interval (clipped to the axis) as an error bar.
  function chart(found) {
    const rows = found.estimates;
    const width = 420;
    const label = 110;
    const right = 28; // room for the "100 %" tick, centred on the axis's end
    const height = 24 * rows.length + 24;
    const x = (share) => label + Math.max(0, Math.min(1, share)) * (width - label - right);
    const box = svg("svg", {
      viewBox: `0 0 ${width} ${height}`, role: "img", class: "survey-chart", "data-testid": "survey-chart",
    });
    const title = svg("title", {});
    title.textContent = `${found.name}: estimated share of each answer, with 95 % intervals`;
    box.append(title);
    rows.forEach((r, i) => {
      const y = 8 + i * 24;
      const text = svg("text", { x: label - 6, y: y + 13, "text-anchor": "end", class: "axis-label" });
      text.textContent = String(r.value);
      const n = found.n || 1;
      const bar = svg("rect", {
        x: label, y, height: 16, width: x(r.share) - label, class: "bar", "data-testid": "survey-bar",
      });
      const lo = x(r.ci95[0] / n);
      const hi = x(r.ci95[1] / n);
      const whisker = svg("path", {
        d: `M${lo},${y + 8}H${hi}M${lo},${y + 3}V${y + 13}M${hi},${y + 3}V${y + 13}`,
        class: "errorbar",
        "data-testid": "survey-errorbar",
      });
      box.append(text, bar, whisker);
    });
    for (const t of [0, 0.5, 1]) {
      const tick = svg("text", { x: x(t), y: height - 2, "text-anchor": "middle", class: "axis-label" });
      tick.textContent = `${t * 100} %`;
      box.append(tick);
    }
    return box;
  }

  // Who may send (docs/security.md, "Surveys and poisoning"): closed surveys take one response per respondent
  // token; an open survey's collection token may add up to its limit, each response honest-looking.
  function access(found) {
    const a = found.access;
    if (!a) return "";
    const tokens = `${num(a.respondent_tokens_used)} of ${num(a.respondent_tokens)} respondent tokens used`;
    if (!a.open) return ` · closed: ${tokens}`;
    return ` · open: ${num(a.open_responses)} of ${num(a.open_limit)} responses from its collection token · ${tokens}`;
  }

  function render(found) {
    const head = el(
      "p",
      { class: "help", "data-testid": "survey-head" },
      `${found.protocol} · ε ${found.epsilon} per person · ${num(found.n)} responses${access(found)}`,
    );
    if (!found.n) return el("div", { "data-testid": "survey" }, el("h3", {}, found.name), head);
    const rows = found.estimates.map((r) =>
      el(
        "tr",
        { "data-testid": "survey-row" },
        el("th", { scope: "row" }, String(r.value)),
        el("td", { class: "num" }, num(r.count)),
        el("td", { class: "num" }, pct(r.share)),
        el("td", { class: "num" }, `[${num(r.ci95[0])}, ${num(r.ci95[1])}]`),
      ),
    );
    const table = el(
      "table",
      { class: "compact" },
      el("thead", {}, el("tr", {}, ...["Answer", "Count", "Share", "95 % interval of the count"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows),
    );
    return el("div", { "data-testid": "survey" }, el("h3", {}, found.name), head, chart(found), table);
  }

  async function show() {
    const section = $("surveys");
    const body = $("surveys-body");
    try {
      const listed = await get("/v1/surveys");
      if (!listed.length) {
        section.hidden = true;
        return;
      }
      const details = await Promise.all(listed.map((s) => get(`/v1/surveys/${encodeURIComponent(s.name)}`)));
      body.replaceChildren(...details.map((d) => render({ ...d, name: d.name })));
      section.hidden = false;
    } catch (err) {
      body.replaceChildren(el("p", { class: "help" }, `Surveys could not be read (${err.message}).`));
      section.hidden = false;
    }
  }

  document.addEventListener("privdb:signed-in", show);
  document.addEventListener("privdb:signed-out", () => {
    $("surveys").hidden = true;
    $("surveys-body").replaceChildren();
  });
})();
