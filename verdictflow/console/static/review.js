// The review page (issue 44): one queued input at a time, labelled by keyboard.
"use strict";

// Keys run one after another (a label, then the move it causes, then the next key), so a
// reviewer typing ahead loses no key and labels never land on the wrong verdict.
const state = { index: null, entry: null, focus: 0, total: 0, mayLabel: false, chain: Promise.resolve(), pending: 0 };
const $ = (id) => document.getElementById(id);

async function api(path, options) {
  const reply = await fetch(path, { credentials: "same-origin", ...options });
  const body = await reply.json().catch(() => ({}));
  if (reply.status === 401) { window.location = "/login"; }
  return { status: reply.status, body };
}

function text(node, value) { node.textContent = value == null ? "" : String(value); }

function drawSegments(node, segments, marks) {
  node.replaceChildren();
  for (const seg of segments) {
    if (!seg.status && !seg.clause) { node.append(document.createTextNode(seg.text)); continue; }
    const mark = document.createElement(seg.status ? "mark" : "span");
    mark.className = "span " + (seg.status || "") + (seg.clause ? " clause-" + seg.clause : "");
    mark.textContent = seg.text;
    if (marks) { mark.title = seg.marks.map((i) => marks[i] && (marks[i].label + ": " + marks[i].note)).join("\n"); }
    node.append(mark);
  }
}

function labelText(verdict) {
  const label = verdict.label;
  if (!label) { return ["unlabelled", "unlabelled"]; }
  if (label.agrees === true) { return ["right", "right"]; }
  if (label.agrees === false) { return ["wrong", "wrong"]; }
  return ["should " + label.expected, label.expected === "pass" ? "right" : "wrong"];
}

function drawVerdicts() {
  const list = $("verdicts");
  list.replaceChildren();
  state.entry.verdicts.forEach((v, i) => {
    const li = document.createElement("li");
    li.className = "verdict" + (i === state.focus ? " focus" : "");
    li.dataset.kind = v.kind;
    li.dataset.verdictId = v.verdict_id;
    const head = document.createElement("div");
    head.className = "head";
    const badge = document.createElement("span");
    badge.className = "badge " + v.decision;
    badge.textContent = v.decision;
    const score = v.score == null ? "" : " score " + v.score.toFixed(3) + (v.threshold == null ? "" : " (threshold " + v.threshold + ")");
    head.append(badge, document.createTextNode(" " + v.kind + (v.tier ? " · " + v.tier + " tier" : "") + score));
    const reasons = document.createElement("div");
    reasons.className = "reasons";
    reasons.textContent = v.reasons.map((r) => (r.code || "") + (r.detail ? ": " + r.detail : "")).join(" · ");
    const label = document.createElement("span");
    const [words, cls] = labelText(v);
    label.className = "label " + cls;
    label.textContent = words + (v.label && v.label.note ? " ✎" : "");
    li.append(head, label, reasons);
    li.addEventListener("click", () => { state.focus = i; drawVerdicts(); });
    list.append(li);
  });
}

function drawEntry(entry) {
  state.entry = entry;
  state.index = entry.index;
  $("notice").hidden = true;
  $("entry").hidden = false;
  text($("position"), "Input " + (entry.index + 1) + " of " + entry.total);
  text($("sampled"), "queued for: " + entry.sampled.join(", "));
  text($("input-id"), entry.input_id);
  text($("scope"), [entry.model, entry.tenant].filter(Boolean).join(" · "));
  text($("query"), entry.query || "(no question)");
  drawSegments($("answer"), entry.answer.segments, entry.marks);
  const contexts = $("contexts");
  contexts.replaceChildren();
  for (const c of entry.contexts) {
    const li = document.createElement("li");
    if (c.doc_id) { const d = document.createElement("small"); d.className = "muted"; d.textContent = c.doc_id + " "; li.append(d); }
    const p = document.createElement("span");
    drawSegments(p, c.segments, null);
    li.append(p);
    contexts.append(li);
  }
  const firstOpen = entry.verdicts.findIndex((v) => !v.label);
  state.focus = firstOpen >= 0 ? firstOpen : 0;
  const focused = entry.verdicts[state.focus];
  $("note").value = focused && focused.label ? focused.label.note : "";
  drawVerdicts();
  drawProgress(entry);
}

function drawProgress(p) {
  state.total = p.total;
  text($("progress"), p.done + " of " + p.total + " inputs labelled");
}

async function show(index) {
  if (index < 0 || (state.total && index >= state.total)) { return; }
  const { status, body } = await api("/api/review/entries/" + index);
  if (status === 200) { drawEntry(body); }
}

async function label(choice) {
  const v = state.entry && state.entry.verdicts[state.focus];
  if (!v) { return; }
  if (!state.mayLabel) { flash("You may look, not label (role: viewer)."); return; }
  const body = { input_id: state.entry.input_id, verdict_id: v.verdict_id, note: $("note").value };
  if (choice === "right" || choice === "wrong") { body.judgement = choice; } else { body.expected = choice; }
  {
    const reply = await api("/api/review/labels", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    if (reply.status !== 200) { flash(reply.body.detail || "the label was not taken"); return; }
    v.label = reply.body;
    $("note").value = "";
    const next = state.entry.verdicts.findIndex((x) => !x.label);
    if (next >= 0) { state.focus = next; drawVerdicts(); refreshSummary(); return; }
    drawVerdicts();
    await refreshSummary();
    drawAgreement();
    if (state.index + 1 < state.total) { await show(state.index + 1); }
  }
}

function flash(message) {
  const notice = $("notice");
  notice.hidden = false;
  notice.className = "error";
  notice.textContent = message;
}

async function refreshSummary() {
  const { status, body } = await api("/api/review");
  if (status !== 200) { return null; }
  state.mayLabel = body.may_label;
  text($("me"), body.me ? body.me.name + " (" + body.me.role + ")" + (body.may_label ? "" : ", read only") : "");
  drawProgress(body);
  return body;
}

async function drawAgreement() {
  const { status, body } = await api("/api/review/agreement");
  if (status !== 200 || !body.kinds.length) { return; }
  const table = document.createElement("table");
  table.className = "grid confusion";
  const head = table.insertRow();
  for (const h of ["window", "kind", "tier", "labels", "agreement", "PASS·pass", "PASS·fail", "FAIL·pass", "FAIL·fail"]) {
    const th = document.createElement("th"); th.textContent = h; head.append(th);
  }
  const rows = [...body.windows.map((w) => [new Date(w.start * 1000).toISOString().slice(0, 16).replace("T", " "), w.kinds]), ["all", body.kinds]];
  for (const [when, kinds] of rows) {
    for (const k of kinds) {
      const row = table.insertRow();
      row.dataset.kind = k.kind;
      const c = k.confusion;
      for (const cell of [when, k.kind, k.tier || "", k.labels, k.agreement == null ? "" : (100 * k.agreement).toFixed(1) + " %",
        c["PASS/pass"] || 0, c["PASS/fail"] || 0, c["FAIL/pass"] || 0, c["FAIL/fail"] || 0]) {
        row.insertCell().textContent = cell;
      }
    }
  }
  const kappa = document.createElement("p");
  kappa.className = "muted";
  kappa.textContent = body.kappa.map((k) => k.kind + ": κ(" + k.reviewers.join(", ") + ") = " + (k.kappa == null ? "n/a" : k.kappa.toFixed(3)) + " over " + k.items).join(" · ");
  $("agreement").replaceChildren(table, kappa);
}

document.addEventListener("keydown", (event) => {
  if (event.target === $("note")) {
    if (event.key === "Escape") { $("note").blur(); }
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || !state.entry) { return; }
  const keys = {
    j: () => show(state.index + 1), ArrowRight: () => show(state.index + 1),
    k: () => show(state.index - 1), ArrowLeft: () => show(state.index - 1),
    ArrowDown: () => { state.focus = Math.min(state.focus + 1, state.entry.verdicts.length - 1); drawVerdicts(); },
    ArrowUp: () => { state.focus = Math.max(state.focus - 1, 0); drawVerdicts(); },
    r: () => label("right"), w: () => label("wrong"), p: () => label("pass"), f: () => label("fail"),
    n: () => $("note").focus(),
  };
  const action = keys[event.key];
  if (!action) { return; }
  event.preventDefault();
  state.pending += 1;
  document.body.dataset.pending = String(state.pending);
  state.chain = state.chain.then(action).catch((error) => flash(String(error))).finally(() => {
    state.pending -= 1;
    document.body.dataset.pending = String(state.pending);
  });
});

async function start() {
  let summary = await refreshSummary();
  while (summary && (!summary.loaded || summary.total === 0)) {
    text($("notice"), summary.loaded ? "The review queue is empty: nothing sampled yet." : "Reading the stored queue and labels…");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    summary = await refreshSummary();
  }
  if (summary) { await show(summary.position); }
  drawAgreement();
  setInterval(drawAgreement, 5000);
  setInterval(refreshSummary, 5000);
}

start();
