// verdictflow console: follows /api/stream (server-sent events) and draws what it says.
// No framework and no build step: the DOM API, SVG for the charts. The server cuts each answer
// into segments along the evidence spans (offsets are code points; JavaScript strings are
// UTF-16), so this file only draws them.
"use strict";

const MAX_ROWS = 200;
const MAX_LIST = 50;
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
// The latest render timings, read by the browser tests and the console benchmark.
window.vfConsole = { ticks: 0, lastRenderMs: 0, failureRenderMs: 0, failureRows: 0 };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

const fmt = (x, d = 3) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));
const pct = (n, total) => (total ? Math.round((100 * n) / total) : 0);
const age = (seconds) =>
  seconds === null || seconds === undefined ? "-"
    : seconds < 90 ? `${Math.round(seconds)} s`
    : seconds < 5400 ? `${Math.round(seconds / 60)} min` : `${Math.round(seconds / 3600)} h`;
const clock = (ts) => new Date(ts * 1000).toLocaleTimeString();

// ---- verdicts by kind -------------------------------------------------------------------

function histogram(counts, scale) {
  const w = 220, h = 46, pad = 10, max = Math.max(1, ...counts), bw = w / counts.length;
  const chart = svg("svg", { class: "hist", viewBox: `0 0 ${w} ${h + pad}`, role: "img" });
  counts.forEach((n, i) => {
    const bh = (h * n) / max;
    const rect = svg("rect", { x: i * bw + 1, y: h - bh, width: bw - 2, height: bh });
    const title = svg("title", {});
    title.textContent = `${fmt((i * scale) / counts.length, 1)}-${fmt(((i + 1) * scale) / counts.length, 1)}: ${n}`;
    rect.append(title);
    chart.append(rect);
  });
  for (const [i, label] of [[0, "0"], [counts.length, String(scale)]]) {
    const t = svg("text", { x: Math.min(i * bw, w - 8), y: h + pad - 1 });
    t.textContent = label;
    chart.append(t);
  }
  return chart;
}

function sparkline(series) {
  const w = 220, h = 22, max = Math.max(1, ...series);
  const points = series.map((n, i) => `${(i * w) / (series.length - 1)},${h - (h * n) / max}`);
  const chart = svg("svg", { class: "spark", viewBox: `0 0 ${w} ${h}`, role: "img" });
  chart.append(svg("polyline", { points: points.join(" ") }));
  return chart;
}

function kindCard(k) {
  const win = k.window, d = win.decisions;
  const shares = el("div", { class: "shares" });
  for (const name of ["PASS", "FAIL", "DEFER"]) {
    shares.append(el("div", { class: `share-${name.toLowerCase()}`, style: `width:${pct(d[name], win.n)}%` }));
  }
  const legend = el("div", { class: "share-legend" },
    el("span", { class: "pass", text: `pass ${pct(d.PASS, win.n)}% (${d.PASS})` }),
    el("span", { class: "fail", text: `fail ${pct(d.FAIL, win.n)}% (${d.FAIL})` }),
    el("span", { class: "defer", text: `defer ${pct(d.DEFER, win.n)}% (${d.DEFER})` }));
  const figures = el("div", { class: "figures" },
    el("b", { class: "n-window", text: String(win.n) }), " in window · ",
    el("span", { class: "rate", text: `${fmt(win.rate, 1)}/s` }), " · total ",
    el("span", { class: "n-total", text: String(k.total.n) }));
  return el("div", { class: "card", id: `kind-${k.kind}`, "data-kind": k.kind },
    el("h3", {}, el("span", { text: k.kind }),
      el("small", { text: k.direction === "lower" ? "lower is better" : "higher is better" })),
    figures, shares, legend,
    histogram(win.histogram, k.scale),
    el("div", { class: "muted", style: "font-size:11px", text: "verdicts per second, last 60 s" }),
    sparkline(k.per_second));
}

function drawKinds(stats) {
  const box = $("kinds");
  if (!stats.kinds.length) return;
  syncSelect($("show-kind"), stats.kinds.map((k) => k.kind));
  box.replaceChildren(...stats.kinds.map(kindCard));
}

function syncSelect(select, values) {
  const have = new Set([...select.options].map((o) => o.value));
  for (const v of values) if (!have.has(v)) select.append(el("option", { value: v, text: v }));
}

function drawHeader(stats) {
  syncSelect($("model"), stats.models);
  syncSelect($("tenant"), stats.tenants);
  const read = Object.values(stats.records).reduce((a, b) => a + b, 0);
  const lag = Object.values(stats.lag).reduce((a, b) => a + b, 0);
  $("ingest").textContent = `${read} records read · lag ${lag} · ${stats.duplicates} duplicates`;
  drawJudge(stats.judge);
}

// The judge tier: what escalated (by priority) and its spend against the budget.
function drawJudge(judge) {
  const box = $("judge");
  if (!judge) return;
  const verdicts = Object.values(judge.verdicts).reduce((a, b) => a + b, 0);
  if (!verdicts) { box.textContent = ""; return; }
  const by = Object.entries(judge.verdicts).map(([p, n]) => `${n} ${p}`).join(", ");
  let text = `judge: ${verdicts} reviews (${by}) · ${judge.tokens_last_minute} tokens in the last minute`;
  if (judge.budget) text += ` of ${judge.budget.tokens_per_minute}/min budget`;
  text += ` · ${judge.tokens_total} since start`;
  box.textContent = text;
}

// ---- failures ---------------------------------------------------------------------------

function markClass(seg) {
  const classes = [];
  if (seg.clause) classes.push(`clause-${seg.clause}`);
  return classes.join(" ");
}

function contextBox(mark) {
  if (mark.context && mark.context.text) {
    return el("div", { class: "context" },
      el("b", { text: `${mark.source} · ${mark.label}: ` }), `"${mark.text}" ${mark.note}. Context ${mark.context.index + 1}: `,
      el("q", { text: mark.context.text }));
  }
  return el("div", { class: "context none" },
    el("b", { text: `${mark.source} · ${mark.label}: ` }), `"${mark.text}": ${mark.note || "unsupported"}`);
}

function answerText(item, detail) {
  const box = el("div", { class: "text" });
  if (item.text === null || item.text === undefined) {
    box.append(el("span", { class: "muted", text: "(text not seen on the answers or summaries topic)" }));
    return box;
  }
  for (const seg of item.segments) {
    let node = document.createTextNode(seg.text);
    if (seg.status) {
      const marks = seg.marks.map((i) => item.marks[i]).filter((m) => !m.clause);
      const tip = marks.map((m) => `${m.source} ${m.label}: ${m.note}` +
        (m.context && m.context.text ? `\ncontext: ${m.context.text}` : "")).join("\n");
      node = el("mark", { class: `span ${seg.status}`, title: tip, "data-label": marks.map((m) => m.label).join(", "),
        onclick: () => detail.replaceChildren(...marks.map(contextBox)) }, seg.text);
    }
    if (seg.clause) node = el("span", { class: markClass(seg) }, node);
    box.append(node);
  }
  return box;
}

// A 401 means the session ended (the token was rotated): back to the login form.
function toLogin(res) {
  if (res.status !== 401) return false;
  window.location.assign("/login");
  return true;
}

function failureRow(item) {
  const detail = el("div", { class: "detail" });
  const score = item.score === null ? "no score" : `${fmt(item.score)} ${item.direction === "lower" ? ">" : "<"} ${fmt(item.threshold)}`;
  const evidence = el("button", { type: "button", text: "evidence", onclick: async () => {
    const res = await fetch(`/api/verdicts/${encodeURIComponent(item.verdict_id)}`);
    if (toLogin(res)) return;
    const body = await res.text();
    let text = body;
    try { text = JSON.stringify(JSON.parse(body), null, 2); } catch (e) { /* keep the raw body */ }
    detail.replaceChildren(el("pre", { class: "evidence", text }));
  } });
  const unsupported = item.marks.filter((m) => m.status === "unsupported" && !m.clause);
  return el("div", { class: "failure", "data-kind": item.kind, "data-decision": item.decision,
      "data-input-id": item.input_id, "data-verdict-id": item.verdict_id },
    el("div", { class: "meta" },
      el("span", { class: `badge ${item.decision}`, text: item.decision }),
      el("span", { class: "kind", text: item.kind }),
      el("span", { text: item.input_id }),
      el("span", { text: score }),
      el("span", { text: `model ${item.model} · tenant ${item.tenant}` }),
      el("span", { text: clock(item.received) }), evidence),
    item.query ? el("div", { class: "query", text: `Q: ${item.query}` }) : null,
    answerText(item, detail),
    el("div", { class: "reasons" }, ...item.reasons.map((r) =>
      el("div", {}, el("code", { text: r.code }), ` ${r.detail}`))),
    unsupported.length ? el("div", { class: "marks-list",
      text: "unsupported: " + unsupported.map((m) => `"${m.text}" (${m.label})`).join("; ") }) : null,
    detail);
}

function drawFailures(items, reset) {
  const t0 = performance.now();
  const box = $("failures");
  if (reset) box.replaceChildren();
  if (!items.length && !reset) return;
  box.querySelector(".empty")?.remove();
  const fragment = document.createDocumentFragment();
  for (let i = items.length - 1; i >= 0 && i >= items.length - MAX_ROWS; i--) fragment.append(failureRow(items[i]));
  box.prepend(fragment);
  while (box.children.length > MAX_ROWS) box.lastElementChild.remove();
  if (!box.children.length) box.append(el("p", { class: "empty", text: "No FAIL or DEFER verdict yet." }));
  $("failure-count").textContent = `${box.querySelectorAll(".failure").length} shown, newest first`;
  void box.offsetHeight; // force style and layout, so the timing includes them
  window.vfConsole.failureRenderMs = performance.now() - t0;
  window.vfConsole.failureRows = items.length;
}

// ---- alerts, dead letters, quality ------------------------------------------------------

function prependList(list, nodes, reset) {
  if (reset) list.replaceChildren();
  if (!nodes.length) return;
  list.querySelector(".empty")?.remove();
  list.prepend(...nodes.reverse());
  while (list.children.length > MAX_LIST) list.lastElementChild.remove();
}

function alertWords(a) {
  switch (a.alert) {
    case "agreement_drop":
      return [`${a.kind} disagrees with reviewers`,
        ` · agreement ${fmt(a.value)} over ${a.labels} labels (bound ${fmt(a.bound, 2)}) · window ${a.window_index}`];
    case "fail_rate":
      return [`${a.kind} FAIL rate ${fmt(a.value)}`,
        ` · model ${a.model ?? "none"} · tenant ${a.tenant ?? "none"} · bound ${fmt(a.bound, 2)} over ${a.window_size} verdicts · window ${a.window_index}`];
    case "judge_budget_spent":
      return ["judge budget spent", ` · ${a.value} tokens on ${a.day} (UTC)`];
    default:
      return [`${a.kind} drifted`,
        ` · model ${a.model ?? "none"} · tenant ${a.tenant ?? "none"} · PSI ${fmt(a.value)} (enters at ${fmt(a.enter_threshold, 2)})` +
        ` · window ${a.window_index} mean ${fmt(a.window_mean)}`];
  }
}

function drawAlerts(items, reset) {
  const nodes = items.map(({ alert: a, received }) => {
    const [title, detail] = alertWords(a);
    return el("li", { class: "alert-row", "data-kind": a.kind, "data-alert": a.alert ?? "score_drift" },
      el("span", { class: "alert", text: title }), `${detail} · ${a.action} · ${clock(received)}`);
  });
  prependList($("alerts"), nodes, reset);
  $("alert-count").textContent = String($("alerts").querySelectorAll(".alert-row").length);
}

function drawDeadLetters(items, reset, stats) {
  const nodes = items.map((d) => el("li", { class: "dead-letter", "data-code": d.error_code },
    el("code", { text: d.error_code }), ` ${d.source} · ${d.error}`,
    el("pre", { text: d.raw || "(empty)" })));
  prependList($("dead-letters"), nodes, reset);
  const codes = Object.entries(stats.dead_letter_codes);
  $("dead-letter-codes").replaceChildren(...codes.map(([c, n]) => el("span", { class: "chip", "data-code": c, text: `${c}: ${n}` })));
  $("dead-letter-count").textContent = String(codes.reduce((a, [, n]) => a + n, 0));
}

function drawQuality(items, reset, stats) {
  const q = stats.quality;
  if (q.rows) {
    $("quality-summary").textContent = `${q.documents} documents · ${q.rows} rows · ` +
      `${fmt(q.rows_per_second, 2)} rows/s (last 60 s) · latest row ${age(q.last_age)} ago`;
  }
  const body = $("quality-rows").tBodies[0];
  if (reset) body.replaceChildren();
  for (const r of items) {
    const f = r.features || {};
    body.prepend(el("tr", { "data-doc-id": r.doc_id },
      el("td", { text: r.doc_id + (r.deleted ? " (deleted)" : "") }), el("td", { class: "num", text: fmt(r.quality) }),
      el("td", { class: "num", text: fmt(f.text) }), el("td", { class: "num", text: fmt(f.graph) }),
      el("td", { class: "num", text: fmt(f.dup_penalty) }), el("td", { class: "num", text: String(r.version) }),
      el("td", { class: "age", "data-received": r.received })));
  }
  while (body.rows.length > 20) body.deleteRow(-1);
  for (const cell of body.querySelectorAll("td.age")) cell.textContent = age(stats.now - Number(cell.dataset.received));
}

// ---- search -----------------------------------------------------------------------------

function setupSearch() {
  const enabled = document.body.dataset.searchEnabled === "true";
  if (!enabled) {
    $("search-note").textContent = "start the console with --api-url to search";
    $("search-q").disabled = true;
  }
  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const q = $("search-q").value.trim();
    if (!q) return;
    $("search-note").textContent = "searching...";
    const res = await fetch("/api/search", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ q, top_k: Number($("search-k").value) || 5 }) });
    if (toLogin(res)) return;
    const body = await res.json();
    const rows = $("search-results").tBodies[0];
    if (!res.ok) {
      $("search-note").textContent = `${body.error}: ${body.detail}`;
      rows.replaceChildren();
      return;
    }
    $("search-note").textContent = `${body.items.length} hits · mode ${body.mode}`;
    rows.replaceChildren(...body.items.map((it, i) => el("tr", { class: "hit" },
      el("td", { text: String(i + 1) }), el("td", { text: it.doc_id }),
      el("td", { class: "num score", text: fmt(it.score) }), el("td", { class: "num quality", text: fmt(it.quality) }),
      el("td", { class: "num final", text: fmt(it.final_score) }),
      el("td", { text: (it.concept_text || "").slice(0, 160) }))));
  });
}

// ---- the stream -------------------------------------------------------------------------

let source = null;

function connect() {
  if (source) source.close();
  const params = new URLSearchParams({ window: $("window").value, model: $("model").value, tenant: $("tenant").value,
    decision: $("show-decision").value, kind: $("show-kind").value });
  source = new EventSource(`/api/stream?${params}`);
  source.addEventListener("tick", (event) => {
    const t0 = performance.now();
    const data = JSON.parse(event.data);
    drawHeader(data.stats);
    drawKinds(data.stats);
    drawFailures(data.failures, data.reset);
    drawAlerts(data.alerts, data.reset);
    drawDeadLetters(data.dead_letters, data.reset, data.stats);
    drawQuality(data.quality, data.reset, data.stats);
    $("status").textContent = "live";
    $("status").className = "status live";
    window.vfConsole.ticks += 1;
    void document.body.offsetHeight; // force style and layout, so the timing includes them
    window.vfConsole.lastRenderMs = performance.now() - t0;
  });
  source.onerror = async () => {
    $("status").textContent = "reconnecting"; $("status").className = "status down";
    try { toLogin(await fetch("/api/stats?window=60")); } catch (e) { /* the server is down: keep retrying */ }
  };
}

for (const id of ["window", "model", "tenant", "show-decision", "show-kind"]) $(id).addEventListener("change", connect);
setupSearch();
connect();
