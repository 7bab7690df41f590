// gpuledger report pages: draw the charts and follow the model page's settings from the page's embedded data
// (JSON, gzip-compressed, in base64), and filter the models index as one types.
// Every number shown was computed by gpuledger; this script only picks, orders and draws them.
(function () {
  "use strict";
  const PLOT_CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };
  const FONT = { family: "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", size: 12, color: "#1d2330" };
  const VENDOR_COLOURS = { NVIDIA: "#3f8f29", AMD: "#d1343b", Intel: "#2f6fd0", Huawei: "#c0392b",
    Google: "#f4a300", AWS: "#ff7f0e", Other: "#7f7f7f" };
  const PALETTE = ["#2f5fd0", "#d1343b", "#3f8f29", "#f4a300", "#8e44ad", "#16a085", "#e67e22", "#7f8c8d"];

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = v; else node.setAttribute(k, v === true ? "" : v);
    }
    for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
    return node;
  }
  // Plotly reads a chart's text (names, hover templates and the values they show) as its own HTML subset:
  // provider text goes in escaped, so an offer id written as <a href=...> shows as text, never as a link.
  const plain = (v) => typeof v === "string" ? v.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;") : v;
  const dash = "—";
  const usd = (v) => v === null || v === undefined ? dash
    : v >= 1000 ? "$" + Math.round(v).toLocaleString("en-US") : "$" + v.toFixed(2);
  const layout = (extra) => Object.assign({ font: FONT, margin: { l: 64, r: 16, t: 16, b: 48 },
    paper_bgcolor: "#fff", plot_bgcolor: "#fff", hoverlabel: { font: FONT } }, extra);

  function groupBy(columns, key) {
    const groups = new Map();
    columns[key].forEach((value, i) => { if (!groups.has(value)) groups.set(value, []); groups.get(value).push(i); });
    return groups;
  }

  // ---- market page ----
  function market(d) {
    document.querySelector("#market-table tbody").innerHTML = d.rows;  // rendered and escaped by gpuledger
    // The source filter: a market's live listings, a cloud's catalog list prices, or both (rows carry data-origin)
    const origin = document.getElementById("origin-filter");
    if (origin) origin.addEventListener("change", () => {
      for (const row of document.querySelectorAll("#market-table tbody tr")) {
        row.hidden = origin.value !== "" && !row.dataset.origin.includes(origin.value);
      }
    });
    const h = d.history, featured = new Set(d.featured);
    const traces = [];
    let colour = 0;
    for (const [gpu, idx] of groupBy(h, "gpu")) {
      const shown = featured.size ? featured.has(gpu) : colour < 4;
      const line = { color: PALETTE[colour++ % PALETTE.length], width: 2 };
      const x = idx.map((i) => h.snapshot_date[i]);
      const listings = idx.map((i) => h.listings[i]);
      for (const [stat, dashStyle] of [["min", "solid"], ["median", "dot"]]) {
        traces.push({ type: "scatter", mode: "lines+markers", name: plain(stat === "min" ? gpu : gpu + " (median)"),
          legendgroup: gpu, showlegend: stat === "min", visible: shown ? true : "legendonly",
          x, y: idx.map((i) => h[stat + "_usd_per_gpu_hr"][i]), customdata: listings,
          line: Object.assign({ dash: dashStyle }, line), marker: { size: 5 },
          hovertemplate: `<b>${plain(gpu)}</b><br>%{x}<br>${stat} $%{y:.2f}/GPU-hr<br>%{customdata} listings<extra></extra>` });
      }
    }
    Plotly.newPlot("history-chart", traces, layout({ yaxis: { title: { text: "$ per GPU-hour" }, rangemode: "tozero",
      tickprefix: "$" }, xaxis: dayAxis(h.snapshot_date), legend: { font: { size: 11 } } }), PLOT_CONFIG);
    const c = d.counts, bars = [];
    let i = 0;
    for (const [provider, idx] of groupBy(c, "provider")) {
      bars.push({ type: "bar", name: plain(provider), x: idx.map((j) => c.snapshot_date[j]), y: idx.map((j) => c.listings[j]),
        marker: { color: PALETTE[i++ % PALETTE.length] } });
    }
    Plotly.newPlot("counts-chart", bars, layout({ barmode: "group", yaxis: { title: { text: "listings" } },
      xaxis: dayAxis(c.snapshot_date) }), PLOT_CONFIG);
  }

  // Daily series: one tick a day while the days fit, never a tick between two days.
  function dayAxis(days) {
    const count = new Set(days).size;
    return count <= 14 ? { type: "date", dtick: 86400000, tickformat: "%b %-d" } : { type: "date", tickformat: "%b %-d, %Y" };
  }

  // ---- model page ----
  // The frontier chart: a line per GPU ($/M against tokens/s per user), the API as a horizontal line; the points
  // come from the page's data, computed by gpuledger.
  function frontier(f) {
    const p = f.points;
    const plain = (v) => typeof v === "string" ? v.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;") : v;
    const font = { family: "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", size: 12, color: "#1d2330" };
    const lines = new Map();
    p.gpu.forEach((gpu, i) => { if (!lines.has(gpu)) lines.set(gpu, []); lines.get(gpu).push(i); });
    const traces = [...lines].map(([gpu, idx]) => ({
      type: "scatter", mode: "lines+markers", name: plain(gpu), x: idx.map((i) => p.user_tok_s[i]),
      y: idx.map((i) => p.usd_per_mtok[i]), marker: { size: 5 },
      customdata: idx.map((i) => [plain(p.provider[i]), p.streams[i], p.ttft_s[i], p.tp[i]]),
      hovertemplate: "<b>%{customdata[3]} x " + plain(gpu) + "</b><br>%{x:.1f} tok/s per user · $%{y:.2f}/M tokens"
        + "<br>%{customdata[0]}, %{customdata[1]} streams, first token %{customdata[2]:.2f} s<extra></extra>",
    }));
    if (f.api && p.user_tok_s.length) {
      const xs = p.user_tok_s;
      traces.push({ type: "scatter", mode: "lines", name: "API: " + plain(f.api.api_provider),
        x: [Math.min(...xs), Math.max(...xs)], y: [f.api.api_usd_per_mtok, f.api.api_usd_per_mtok],
        line: { dash: "dash", color: "#1d2330", width: 2 },
        hovertemplate: "<b>API (" + plain(f.api.api_provider) + ")</b><br>$%{y:.2f}/M tokens<extra></extra>" });
    }
    Plotly.newPlot("frontier", traces, { font: font, margin: { l: 64, r: 16, t: 16, b: 48 }, paper_bgcolor: "#fff",
      plot_bgcolor: "#fff", hoverlabel: { font: font }, xaxis: { title: { text: "tokens/s per user (mean)" } },
      yaxis: { title: { text: "$ per M output tokens" }, type: "log", tickprefix: "$" }, legend: { font: { size: 11 } } },
      { displaylogo: false, responsive: true });
  }

  function model(d) {
    document.getElementById("estimate-cards").innerHTML = d.estimate_cards;  // rendered and escaped by gpuledger
    if (d.frontier && document.getElementById("frontier")) frontier(d.frontier);
    const settings = new Map(d.settings.map((s) => [s.key, s]));
    if (!d.settings.length) {  // a day without GPU listings (every provider failed): nothing to price
      document.getElementById("setting-note").textContent = "No GPU listing was loaded this day: nothing is priced.";
      return;
    }
    const state = { key: d.default, sortKey: null, descending: false };
    const picks = { precision: document.getElementById("precision"), context: document.getElementById("context"),
      streams: document.getElementById("streams") };
    const current = settings.get(state.key);
    for (const [name, select] of Object.entries(picks)) {
      const values = [...new Set(d.settings.map((s) => s[name]))];
      for (const v of values) {
        const label = name === "precision" ? String(v).toUpperCase() : name === "context"
          ? Number(v).toLocaleString("en-US") + " tokens" : v + (v === 1 ? " stream" : " streams");
        select.append(el("option", { value: v, selected: v === current[name], text: label }));
      }
      select.addEventListener("change", () => {
        const want = { precision: picks.precision.value, context: picks.context.value, streams: picks.streams.value };
        const match = d.settings.find((s) => String(s.precision) === want.precision && String(s.context) === want.context
          && String(s.streams) === want.streams);
        if (match) { state.key = match.key; render(); }
      });
    }
    if (d.ownership) {
      const t = d.ownership;
      document.getElementById("own-note").textContent = `Buying the hardware at its list or market price over ${t.years} years, `
        + `power at $${t.usd_per_kwh}/kWh, $${t.maintenance_usd_per_month} maintenance a month, ${Math.round(t.utilisation * 100)}% utilised; `
        + "against renting the cheapest replica today. Break-even is the monthly volume above which owning is cheaper "
        + "(— when it exceeds what the hardware can serve, or nothing is rented).";
    }
    const pricedOnly = document.getElementById("priced-only");
    pricedOnly.addEventListener("change", render);
    render();

    function render() {
      const view = d.views[state.key], s = settings.get(state.key);
      document.body.dataset.setting = state.key;
      document.getElementById("setting-note").textContent =
        `${s.precision.toUpperCase()}, ${s.context.toLocaleString("en-US")} tokens`
        + (s.input_tokens === undefined ? "" : ` (requests of ${s.input_tokens.toLocaleString("en-US")} in + `
          + `${s.output_tokens.toLocaleString("en-US")} out, prefill included)`)
        + `, ${s.streams} streams: on-demand prices`;
      cards(view.cards);
      table(view.table);
      scatter(view.table);
      own(view.own);
      faq(view.faq);
    }

    function provenance(t, i) {
      return t.offer_ids[i] ? `listings ${t.offer_ids[i]} · ${t.provider[i]} ${t.price_kind[i]} · seen ${t.price_observed_at[i]}` : null;
    }

    function cards(c) {
      const best = [], vendors = new Map();
      c.card.forEach((card, i) => {
        const split = card.indexOf(": ");
        if (split < 0) { best.push(i); return; }
        const vendor = card.slice(0, split);
        if (!vendors.has(vendor)) vendors.set(vendor, {});
        vendors.get(vendor)[card.slice(split + 2)] = i;
      });
      document.getElementById("calc-cards").replaceChildren(...best.map((i) => el("div", { class: "card", "data-card": c.card[i] },
        el("div", { class: "title", text: c.card[i] }),
        el("div", { class: "part", text: `${c.tp[i]} x ${c.gpu[i]}` }),
        el("dl", {}, el("dt", { text: "Tokens/s" }), el("dd", { class: "tok", text: c.agg_tok_s_label[i] ?? dash }),
          el("dt", { text: "Per hour" }), el("dd", { class: "usd-hr", text: c.replica_usd_per_hr_label[i] }),
          el("dt", { text: "Per M tokens" }), el("dd", { class: "usd-m", text: c.usd_per_mtok_label[i] }),
          el("dt", { text: "Memory used" }), el("dd", { text: c.memory_used_pct_label[i] })),
        el("div", { class: "src", text: c.provider[i]
          ? `${c.provider[i]} ${c.price_kind[i]}, listings ${c.offer_ids[i]}, seen ${c.price_observed_at[i]}` : "no live price" }))));
      const part = (i) => i === undefined ? dash : c.part_label[i];
      document.querySelector("#vendor-table tbody").replaceChildren(...[...vendors].map(([vendor, picks]) =>
        el("tr", { "data-vendor": vendor }, el("td", { text: vendor }),
          el("td", { class: "wrap", text: part(picks["best value"]), title: picks["best value"] === undefined ? null
            : `listings ${c.offer_ids[picks["best value"]]}, seen ${c.price_observed_at[picks["best value"]]}` }),
          el("td", { class: "wrap", text: part(picks["fewest GPUs"]) }))));
    }

    function table(t) {
      const n = t.gpu.length;
      let order = [...Array(n).keys()];
      if (pricedOnly.checked) order = order.filter((i) => t.usd_per_mtok[i] !== null);
      if (state.sortKey) {
        const values = t[state.sortKey], sign = state.descending ? -1 : 1;
        order.sort((a, b) => {
          const x = values[a], y = values[b];
          if (x === null || y === null) return (x === null) - (y === null);
          return (x < y ? -1 : x > y ? 1 : 0) * sign || a - b;
        });
      }
      const numericColumns = new Set(d.columns.filter((col) => typeof t[col.key].find((v) => v !== null) === "number")
        .map((col) => col.key));
      const head = el("tr", {}, d.columns.map((col) => {
        const numeric = numericColumns.has(col.key);
        const th = el("th", { class: "sortable" + (numeric ? " num" : ""), "data-key": col.key, text: col.label,
          "aria-sort": state.sortKey === col.key ? (state.descending ? "descending" : "ascending") : null });
        th.addEventListener("click", () => {
          state.descending = state.sortKey === col.key ? !state.descending : false;
          state.sortKey = col.key;
          table(t);
        });
        return th;
      }));
      document.querySelector("#model-table thead").replaceChildren(head);
      const body = order.map((i) => el("tr", { class: t.usd_per_mtok[i] === null ? "unpriced" : "priced", "data-gpu": t.gpu[i],
        "data-provider": t.provider[i], "data-pricing": t.replica_pricing[i] },
        d.columns.map((col) => {
          const label = t[col.key + "_label"] ? t[col.key + "_label"][i] : t[col.key][i];
          const numeric = numericColumns.has(col.key);
          const attrs = { class: numeric ? "num" : null, "data-key": col.key, text: label === null ? dash : String(label) };
          if (col.key === "replica_usd_per_hr" || col.key === "usd_per_mtok") attrs.title = provenance(t, i);
          if (col.key === "replica_pricing") { attrs.title = d.pricing[t.replica_pricing[i]] || null; }
          if (col.key === "gpu") attrs.title = `${t.vendor[i] || ""}${t.uncertain[i] ? " · uncertain spec" : ""}`;
          return el("td", attrs);
        })));
      document.querySelector("#model-table tbody").replaceChildren(...body);
      const unpriced = n - t.usd_per_mtok.filter((v) => v !== null).length;
      document.getElementById("table-note").textContent = `${n} parts fit within one node, ${n - unpriced} with a live price` +
        (pricedOnly.checked ? ` (the ${unpriced} without one are hidden).` : ". Click a header to sort; hover a price for its listings.");
    }

    function scatter(t) {
      const byVendor = new Map();
      t.gpu.forEach((_, i) => {
        if (t.replica_usd_per_hr[i] === null) return;
        const vendor = t.vendor[i] || "Other";
        if (!byVendor.has(vendor)) byVendor.set(vendor, []);
        byVendor.get(vendor).push(i);
      });
      let k = 0;
      const traces = [...byVendor].map(([vendor, idx]) => ({
        type: "scatter", mode: "markers", name: plain(vendor),
        x: idx.map((i) => t.agg_tok_s[i]), y: idx.map((i) => t.replica_usd_per_hr[i]),
        marker: { size: idx.map((i) => 8 + 5 * Math.log2(t.tp[i])), color: VENDOR_COLOURS[vendor] || PALETTE[k++ % PALETTE.length],
          opacity: 0.8, line: { width: 1, color: "#fff" } },
        customdata: idx.map((i) => [t.gpu[i], t.tp[i], t.provider[i], t.usd_per_mtok_label[i], t.offer_ids[i],
          t.agg_tok_s_label[i]].map(plain)),
        hovertemplate: "<b>%{customdata[1]} x %{customdata[0]}</b><br>%{customdata[5]} tok/s · $%{y:.2f}/hr · %{customdata[3]}/M tokens"
          + "<br>%{customdata[2]}, listings %{customdata[4]}<extra></extra>",
      }));
      Plotly.react("scatter", traces, layout({ xaxis: { title: { text: "tokens/s (all streams)" }, rangemode: "tozero" },
        yaxis: { title: { text: "$ per hour (one replica)" }, rangemode: "tozero", tickprefix: "$" },
        legend: { title: { text: "vendor" } } }), PLOT_CONFIG);
    }

    function own(o) {
      const heads = ["part", "hardware", "GPUs", "price", "own $/hr", "own $/M", "rent $/M", "break-even (M tokens/month)"];
      document.querySelector("#own-table thead").replaceChildren(el("tr", {}, heads.map((h, i) => el("th", { class: i > 1 ? "num" : null, text: h }))));
      document.querySelector("#own-table tbody").replaceChildren(...o.gpu.map((gpu, i) => el("tr", { "data-gpu": gpu },
        el("td", { text: gpu }), el("td", { text: `${o.price_kind[i]} price (${o.quoted_on[i]})` }),
        el("td", { class: "num", text: `${o.gpu_count[i]} (${o.replicas[i]} x TP${o.tp[i]})` }),
        el("td", { class: "num", text: usd(o.hardware_usd[i]) }), el("td", { class: "num", text: usd(o.own_usd_per_hr[i]) }),
        el("td", { class: "num", text: usd(o.own_usd_per_mtok[i]) }),
        el("td", { class: "num", text: o.rent_usd_per_mtok[i] === null ? dash : `${usd(o.rent_usd_per_mtok[i])} (${o.rent_provider[i]})` }),
        el("td", { class: "num", text: o.breakeven_mtok_per_month[i] === null ? dash
          : Math.round(o.breakeven_mtok_per_month[i]).toLocaleString("en-US") }))));
    }

    function faq(items) {
      document.getElementById("faq").replaceChildren(...items.map((f, i) => el("details", { class: "faq", open: i < 2 },
        el("summary", { text: f.q }), el("p", { text: f.a }))));
    }
  }

  // ---- models index ----
  function models() {
    const search = document.getElementById("model-search");
    const items = [...document.querySelectorAll("#families li")];
    const sections = [...document.querySelectorAll("#families section.family")];
    function filter() {
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      let shown = 0;
      for (const li of items) {
        const match = words.every((w) => li.dataset.search.includes(w));
        li.hidden = !match;
        shown += match;
      }
      for (const section of sections) section.hidden = !section.querySelector("li:not([hidden])");
      document.getElementById("model-count").textContent = `${shown} shown`;
      document.getElementById("no-model").hidden = shown > 0;
    }
    search.addEventListener("input", filter);
    filter();
  }

  // The page's data: base64 of gzip-compressed JSON, decompressed by the browser (no network, works from disk).
  async function unpack(text) {
    const bytes = Uint8Array.from(atob(text.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  async function pageData() {
    const source = document.getElementById("page-data");
    if (!source) return null;
    const data = await unpack(source.textContent);
    if (window.gpuledgerShared) {
      joinShared(data, await unpack(window.gpuledgerShared), await unpack(window.gpuledgerReplicas));
    }
    return data;
  }

  // A model page carries each setting's table as the night has it: the table's order (positions in the shared
  // file's rows, which hold the columns the estimator alone determines) and the rows the night's prices touch,
  // each naming its replica in the night's replicas file; here they are put back together as one table, columns
  // of values in the table's order.
  function joinShared(d, shared, replicas) {
    for (const [key, view] of Object.entries(d.views)) {
      const parts = shared.views[key], night = view.table.rows, order = view.table.order;
      const row = new Map(night.at.map((at, j) => [at, j]));
      const table = { rank: order.map((_, i) => i + 1) };
      for (const [column, values] of Object.entries(parts)) table[column] = order.map((i) => values[i]);
      for (const [column, values] of Object.entries(night)) {
        if (column !== "at" && column !== "replica") table[column] = order.map((i) => row.has(i) ? values[row.get(i)] : null);
      }
      for (const [column, values] of Object.entries(replicas)) {
        table[column] = order.map((i) => row.has(i) ? values[night.replica[row.get(i)]] : null);
      }
      view.table = table;
    }
  }

  const pages = { market, model, models };
  pageData().then((data) => {
    const draw = pages[document.body.dataset.page];
    if (draw) draw(data);
    window.gpuledgerPage = data;
    document.body.dataset.drawn = "1";  // what the browser tests wait for
  });
})();
