// The web chat of `agent-adaptor serve`: AG-UI over fetch + SSE, the
// thread API, markdown through the vendored `marked` and `highlight.js`.
// A thread's history (GET /api/threads/{id} `transcript`) is the same AG-UI
// frames the live stream carried, rendered by the same code: a reloaded
// thread shows the cards it showed live.
"use strict";

const $ = (id) => document.getElementById(id);
const log = $("log");
const newId = () => (crypto.randomUUID ? crypto.randomUUID()
  : Date.now().toString(36) + Math.random().toString(36).slice(2));

let threadId = newId();
let messages = [];          // the AG-UI input's conversation
let busy = false;
let controller = null;      // aborts the streaming run (Stop, Esc)
let lastInput = null;       // the last run's input, for Retry
let toolViews = {};         // tool call id -> its card (a resumed run carries the result)
let approvals = {};         // interrupt id -> its card

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function button(cls, text, label) {
  const b = el("button", cls, text);
  b.type = "button";
  if (label) b.setAttribute("aria-label", label);
  return b;
}
// A box that may scroll (long tool input or output) takes keyboard focus,
// so it can be scrolled without a mouse.
function scrollable(node) {
  node.tabIndex = 0;
  return node;
}
function add(node) {
  log.appendChild(node);
  log.scrollTop = log.scrollHeight;
  return node;
}
function card(kind, cls, text) {
  const c = el("div", "card " + cls, text);
  c.dataset.card = kind;
  return c;
}
function setBusy(b) {
  busy = b;
  $("send").disabled = b;
  $("send").hidden = b;
  $("stop").hidden = !b;
  $("new").disabled = b;
}

// --- markdown ---------------------------------------------------------------
// Model output is untrusted: raw HTML is shown as text, only http(s) and
// mailto links become links, images become links (nothing is fetched).
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) =>
  ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const safeHref = (href) => {
  try {
    const u = new URL(href, location.href);
    return ["http:", "https:", "mailto:"].includes(u.protocol) ? u.href : null;
  } catch (e) { return null; }
};
let md = null;
function markdown() {
  if (md || !window.marked) return md;
  md = new window.marked.Marked({ gfm: true, breaks: false });
  md.use({
    renderer: {
      html({ text }) { return escapeHtml(text); },
      link({ href, title, tokens }) {
        const inner = this.parser.parseInline(tokens);
        const safe = safeHref(href);
        if (!safe) return inner;
        const t = title ? ' title="' + escapeHtml(title) + '"' : "";
        return '<a href="' + escapeHtml(safe) + '"' + t + ' rel="noopener noreferrer nofollow" target="_blank">' + inner + "</a>";
      },
      image({ href, text }) {
        const safe = safeHref(href);
        return safe ? '<a href="' + escapeHtml(safe) + '" rel="noopener noreferrer nofollow" target="_blank">'
          + escapeHtml(text || safe) + "</a>" : escapeHtml(text);
      },
      code({ text, lang }) {
        const language = (lang || "").trim().split(/\s+/)[0].toLowerCase();
        let html = escapeHtml(text);
        if (window.hljs && language && window.hljs.getLanguage(language)) {
          try { html = window.hljs.highlight(text, { language, ignoreIllegals: true }).value; } catch (e) { /* plain */ }
        }
        const cls = language ? ' class="hljs language-' + escapeHtml(language) + '"' : ' class="hljs"';
        return '<div class="codeblock"><pre><code' + cls + ">" + html + "</code></pre></div>";
      },
    },
  });
  return md;
}
function renderMarkdown(target, text) {
  const m = markdown();
  if (!m) { target.textContent = text; return; }
  target.innerHTML = m.parse(text);
  for (const block of target.querySelectorAll(".codeblock")) {
    const code = block.querySelector("code");
    block.appendChild(copyButton("code", "copy-code", () => code.textContent));
  }
}
// A copy button: "Copy" (and, for screen readers, what it copies).
function copyButton(what, testid, text) {
  const b = button("copy");
  const shown = b.appendChild(el("span", "", "Copy"));
  b.appendChild(el("span", "sr-only", " " + what));
  b.dataset.testid = testid;
  b.onclick = async () => {
    try {
      await navigator.clipboard.writeText(text());
      shown.textContent = "Copied";
    } catch (e) {
      shown.textContent = "Copy failed";
    }
    setTimeout(() => { shown.textContent = "Copy"; }, 1500);
  };
  return b;
}

// --- cards ------------------------------------------------------------------
function userCard(text) {
  const c = add(card("user", "user", text));
  c.dataset.testid = "user";
  return c;
}
function assistantCard() {
  const c = add(card("assistant", "assistant"));
  c.dataset.testid = "assistant";
  const body = c.appendChild(el("div", "body"));
  const actions = c.appendChild(el("div", "actions"));
  const view = { card: c, body, text: "", pending: false };
  actions.appendChild(copyButton("answer", "copy-answer", () => view.text));
  return view;
}
function setAnswer(view, text) {
  view.text = text;
  if (view.pending) return;
  view.pending = true;
  requestAnimationFrame(() => { view.pending = false; renderMarkdown(view.body, view.text); log.scrollTop = log.scrollHeight; });
}
function finishAnswer(view) {
  view.pending = false;
  renderMarkdown(view.body, view.text);
}
function thinkingCard() {
  const c = add(card("thinking", "thinking"));
  c.dataset.testid = "thinking";
  const d = c.appendChild(el("details"));
  d.open = true;
  d.appendChild(el("summary", "", "Reasoning"));
  return d.appendChild(el("div", "body"));
}
function errorCard(text, retry) {
  const c = add(card("error", "error"));
  c.dataset.testid = "error";
  c.setAttribute("role", "alert");
  c.appendChild(el("span", "body", text));
  if (retry) {
    const b = c.appendChild(button("", "Retry"));
    b.dataset.testid = "retry";
    b.onclick = () => { if (!busy) { b.remove(); runAgui({ ...lastInput, runId: newId() }); } };
  }
  return c;
}
function noteCard(text) { return add(card("note", "note", text)); }

function toolCard(id, name) {
  const c = add(card("tool", "tool"));
  c.dataset.testid = "tool-call";
  c.dataset.state = "running";
  const head = c.appendChild(el("div", "head"));
  head.appendChild(el("span", "name", name));
  const status = head.appendChild(el("span", "status", "running…"));
  c.appendChild(el("div", "label", "Input"));
  const args = c.appendChild(scrollable(el("pre", "args")));
  const t = { card: c, status, args, argText: "" };
  toolViews[id] = t;
  return t;
}
function toolResult(ev) {
  let t = toolViews[ev.toolCallId] || toolCard(ev.toolCallId, "tool");
  let failed = false;
  try { const r = JSON.parse(ev.content); failed = !!(r && r.is_error === true); } catch (e) { /* plain text */ }
  const denied = t.decision === "rejected" || ev.content.startsWith("The user did not allow");
  t.card.dataset.state = denied ? "denied" : failed ? "failed" : "done";
  t.status.textContent = denied ? "✗ denied" : failed ? "✗ failed" : "✓ done";
  t.card.appendChild(el("div", "label", "Output"));
  t.card.appendChild(scrollable(el("pre", "output", ev.content)));
  // The card moves below the approval decided for it: it finished then.
  if (t.decision) add(t.card);
}

// What an approval is about: the command, the file and its change, or the
// tool's input.
function describe(it) {
  const meta = it.metadata || {};
  const details = meta.details || {};
  const input = details.input || {};
  const out = el("div", "what");
  const tool = details.tool_name || details.tool || "";
  const line = (label, value) => {
    const p = out.appendChild(el("div"));
    p.appendChild(el("strong", "", label + " "));
    p.appendChild(el("code", "", value));
  };
  if (tool) line("Tool", tool);
  if (typeof input.command === "string") {
    out.appendChild(el("div", "", "Command"));
    out.appendChild(el("pre", "", input.command)).dataset.testid = "approval-command";
  }
  const path = input.file_path || input.path || input.filePath || details.path;
  if (typeof path === "string" && typeof input.command !== "string") line("Path", path);
  const diff = details.diff || input.diff || input.patch;
  if (typeof diff === "string") {
    out.appendChild(diffView(diff));
  } else if (typeof input.old_string === "string" || typeof input.new_string === "string") {
    const lines = [];
    for (const l of String(input.old_string || "").split("\n")) if (input.old_string) lines.push("-" + l);
    for (const l of String(input.new_string || "").split("\n")) lines.push("+" + l);
    out.appendChild(diffView(lines.join("\n")));
  } else if (typeof input.content === "string") {
    out.appendChild(el("div", "", "Content"));
    out.appendChild(el("pre", "", input.content));
  }
  if (Object.keys(input).length && typeof input.command !== "string" && typeof diff !== "string"
      && typeof input.old_string !== "string" && typeof input.content !== "string") {
    out.appendChild(el("div", "", "Input"));
    out.appendChild(el("pre", "", JSON.stringify(input, null, 2))).dataset.testid = "approval-input";
  }
  if (!out.childNodes.length && it.message) out.appendChild(el("div", "", it.message));
  return out;
}
function diffView(text) {
  const pre = el("pre", "diff");
  pre.dataset.testid = "approval-diff";
  for (const l of text.split("\n")) {
    const cls = l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "";
    pre.appendChild(el("span", cls, l + "\n"));
  }
  return pre;
}
function decisionText(result, reason, always) {
  if (result === "approved" && always) return "Always allowed " + always + " in this thread";
  if (result === "approved") return "Allowed once";
  if (result === "answered") return "Answered";
  const why = reason ? ": " + reason : "";
  if (result === "rejected" || result === "denied") return "Denied" + why;
  return "Not answered (" + result + ")";
}
function decide(id, result, reason, always) {
  const a = approvals[id];
  if (!a) return;
  a.card.querySelectorAll(".buttons").forEach((b) => b.remove());
  let d = a.card.querySelector(".decision");
  if (!d) d = a.card.appendChild(el("div", "decision"));
  d.textContent = decisionText(result, reason, always);
  a.card.dataset.decision = result;
  if (a.toolCallId && toolViews[a.toolCallId]) toolViews[a.toolCallId].decision = result;
}

function approvalCard(it, answerable) {
  const c = add(card("approval", "approval"));
  c.dataset.testid = "approval";
  c.setAttribute("role", "group");
  const question = it.reason === "question";
  const heading = el("h2", "", question ? "The agent asks" : "Approval needed");
  heading.id = "apr-" + it.id;
  c.setAttribute("aria-labelledby", heading.id);
  c.appendChild(heading);
  if (question) c.appendChild(el("div", "what", it.message || ""));
  else c.appendChild(describe(it));
  approvals[it.id] = { card: c, toolCallId: it.toolCallId };
  if (!answerable) return c;
  const buttons = c.appendChild(el("div", "buttons"));
  const resume = (payload, result, reason, always) => {
    decide(it.id, result, reason, always);
    runAgui({ threadId, runId: newId(), messages: messages.slice(),
              resume: [{ interruptId: it.id, status: "resolved", payload }] });
  };
  if (question) {
    const input = buttons.appendChild(el("input"));
    input.setAttribute("aria-label", "Your answer");
    const ok = buttons.appendChild(button("yes", "Answer"));
    ok.onclick = () => resume({ answer: input.value }, "answered");
  } else {
    const yes = buttons.appendChild(button("yes", "Allow once"));
    yes.dataset.testid = "approve";
    yes.onclick = () => resume({ approved: true }, "approved");
    const tool = it.metadata && it.metadata.alwaysAllowTool;
    if (typeof tool === "string" && tool) {
      const always = buttons.appendChild(button("yes", "Always allow " + tool + " in this thread"));
      always.dataset.testid = "approve-always";
      always.onclick = () => resume({ approved: true, always: true }, "approved", undefined, tool);
    }
  }
  const reason = buttons.appendChild(el("input"));
  reason.placeholder = "Reason (optional)";
  reason.setAttribute("aria-label", "Reason for denying (optional)");
  reason.dataset.testid = "deny-reason";
  const no = buttons.appendChild(button("no", "Deny"));
  no.dataset.testid = "deny";
  no.onclick = () => {
    const why = reason.value.trim() || "denied in the web chat";
    resume({ approved: false, reason: why }, "rejected", why);
  };
  return c;
}

function usageText(usage, metadata) {
  let input = 0, output = 0, cached = 0, any = false;
  const ours = metadata && metadata.agentAdaptor;
  const cost = ours && typeof ours.costUsd === "number" ? ours.costUsd : null;
  for (const u of usage || []) {
    any = true;
    input += u.inputTokens || 0;
    output += u.outputTokens || 0;
    cached += u.cachedInputTokens || 0;
  }
  if (!any) return null;
  const parts = [input + " in", output + " out"];
  if (cached) parts.push(cached + " cached");
  if (cost !== null) parts.push("$" + cost.toFixed(cost < 0.01 ? 4 : 2));
  return parts.join(" · ");
}

// --- AG-UI events -> cards (live and replayed alike) -----------------------
function newView() { return { text: null, answers: [], thinking: null, interrupted: false, failed: false, live: false }; }

function onEvent(ev, view) {
  switch (ev.type) {
    case "TEXT_MESSAGE_START":
      view.text = assistantCard();
      view.answers.push(view.text);
      break;
    case "TEXT_MESSAGE_CONTENT":
      if (!view.text) { view.text = assistantCard(); view.answers.push(view.text); }
      setAnswer(view.text, view.text.text + ev.delta);
      break;
    case "TEXT_MESSAGE_END":
      if (view.text) finishAnswer(view.text);
      view.text = null;
      break;
    case "REASONING_MESSAGE_START": view.thinking = thinkingCard(); break;
    case "REASONING_MESSAGE_CONTENT":
      if (!view.thinking) view.thinking = thinkingCard();
      view.thinking.textContent += ev.delta;
      break;
    case "REASONING_MESSAGE_END": view.thinking = null; break;
    case "TOOL_CALL_START": toolCard(ev.toolCallId, ev.toolCallName); break;
    case "TOOL_CALL_ARGS": {
      const t = toolViews[ev.toolCallId];
      if (t) {
        t.argText += ev.delta;
        let shown = t.argText;
        try { shown = JSON.stringify(JSON.parse(t.argText), null, 2); } catch (e) { /* still streaming */ }
        t.args.textContent = shown;
      }
      break;
    }
    case "TOOL_CALL_RESULT": toolResult(ev); break;
    case "RUN_FINISHED": {
      const outcome = ev.outcome || {};
      if (outcome.type === "interrupt") {
        view.interrupted = true;
        for (const it of outcome.interrupts || []) approvalCard(it, view.live);
      } else if (outcome.type === "cancelled") {
        noteCard("Run stopped");
      } else {
        if (typeof ev.result === "string" && view.answers.length <= 1) {
          // The result is the authority: streamed deltas may have been
          // dropped under backpressure (CUSTOM agent_adaptor.dropped).
          const a = view.answers[0] || assistantCard();
          if (a.text !== ev.result) { a.text = ev.result; }
          finishAnswer(a);
          if (!view.answers.length) view.answers.push(a);
        }
        const u = usageText(ev.usage, ev.metadata);
        if (u) { const c = add(card("usage", "usage", u)); c.dataset.testid = "usage"; }
      }
      for (const a of view.answers) if (a.text) messages.push({ id: newId(), role: "assistant", content: a.text });
      break;
    }
    case "RUN_ERROR":
      view.failed = true;
      errorCard("Run failed: " + (ev.message || "unknown error") + (ev.code ? " (" + ev.code + ")" : ""), view.live);
      break;
    default: break;
  }
}

// One AG-UI run: POST RunAgentInput, read the SSE stream, render events.
async function runAgui(input) {
  setBusy(true);
  lastInput = input;
  controller = new AbortController();
  const view = newView();
  view.live = true;
  let ended = false;
  try {
    const resp = await fetch("/agui", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "text/event-stream" },
      body: JSON.stringify(input),
      signal: controller.signal,
    });
    if (!resp.ok || !resp.body) {
      let msg = "HTTP " + resp.status;
      try { const b = await resp.json(); if (b.error) msg = b.error.message + " (" + b.error.code + ")"; } catch (e) { /* no JSON */ }
      errorCard("The server refused the run: " + msg, true);
      return;
    }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const data = frame.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).replace(/^ /, "")).join("\n");
        if (!data) continue;
        const ev = JSON.parse(data);
        if (ev.type === "RUN_FINISHED" || ev.type === "RUN_ERROR") ended = true;
        onEvent(ev, view);
      }
    }
    if (!ended) errorCard("The connection ended before the run did (the server stopped or the network failed)", true);
  } catch (e) {
    if (e && e.name === "AbortError") {
      if (view.text) finishAnswer(view.text);
      noteCard("Run stopped");
    } else if (!ended) {
      errorCard("The connection failed: " + (e && e.message ? e.message : e), true);
    }
  } finally {
    controller = null;
    setBusy(false);
    if (!view.interrupted) { loadThreads(); loadAllowed(); }
  }
}
// Stop: tell the server (a dropped stream alone is given a few seconds for
// a reconnect), then stop reading.
function stop() {
  if (!controller) return;
  if (lastInput) {
    const url = "/api/threads/" + encodeURIComponent(lastInput.threadId) + "/runs/" +
      encodeURIComponent(lastInput.runId) + "/cancel";
    fetch(url, { method: "POST" }).catch(() => { /* the abort below still stops reading */ });
  }
  controller.abort();
}

// --- threads ----------------------------------------------------------------
function remember(id) {
  const q = id ? "?thread=" + encodeURIComponent(id) : "";
  history.replaceState(null, "", location.pathname + q);
}
function setTitle(t) { $("title").textContent = t || "New chat"; document.title = (t ? t + " · " : "") + "agent-adaptor"; }

async function loadThreads() {
  const list = $("threads");
  let data;
  try {
    const resp = await fetch("/api/threads");
    if (!resp.ok) return;
    data = await resp.json();
  } catch (e) { return; }
  list.textContent = "";
  for (const t of data.threads) {
    const li = el("li", t.id === threadId ? "current" : "");
    li.dataset.testid = "thread-item";
    li.dataset.threadId = t.id;
    const open = li.appendChild(button("open"));
    open.appendChild(el("span", "", t.title));
    open.appendChild(el("small", "", t.driver + " · " + new Date(t.updatedAt).toLocaleString()));
    if (t.id === threadId) { open.setAttribute("aria-current", "true"); setTitle(t.title); }
    open.onclick = () => { closeMenu(); openThread(t.id); };
    const ren = li.appendChild(button("act", "✎", "Rename " + t.title));
    ren.dataset.testid = "rename";
    ren.onclick = () => renameThread(t);
    const del = li.appendChild(button("act", "✕", "Delete " + t.title));
    del.dataset.testid = "delete";
    del.onclick = () => deleteThread(t);
    list.appendChild(li);
  }
}
async function renameThread(t) {
  const title = window.prompt("Rename the thread", t.title);
  if (title === null || !title.trim()) return;
  const resp = await fetch("/api/threads/" + encodeURIComponent(t.id), {
    method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ title: title.trim() }),
  });
  if (!resp.ok) errorCard("Rename failed: " + (await failure(resp)));
  loadThreads();
}
async function deleteThread(t) {
  if (!window.confirm("Delete \u201c" + t.title + "\u201d and its history?")) return;
  const resp = await fetch("/api/threads/" + encodeURIComponent(t.id), { method: "DELETE" });
  if (!resp.ok) { errorCard("Delete failed: " + (await failure(resp))); return; }
  if (t.id === threadId) newThread();
  loadThreads();
}
async function failure(resp) {
  try { const b = await resp.json(); if (b.error) return b.error.message; } catch (e) { /* no JSON */ }
  return "HTTP " + resp.status;
}
function reset() {
  messages = []; toolViews = {}; approvals = {}; lastInput = null;
  log.textContent = "";
  showAllowed([]);
}

// The tools always allowed in this thread, each with a revoke control.
function allowedUrl(tool) {
  return "/api/threads/" + encodeURIComponent(threadId) + "/allowed-tools"
    + (tool ? "/" + encodeURIComponent(tool) : "");
}
function showAllowed(tools) {
  const box = $("allowed");
  const list = $("allowed-list");
  list.textContent = "";
  box.hidden = !tools.length;
  for (const tool of tools) {
    const li = list.appendChild(el("li"));
    li.dataset.testid = "allowed-tool";
    li.appendChild(el("code", "", tool));
    const revoke = li.appendChild(button("act", "Revoke", "Revoke " + tool));
    revoke.dataset.testid = "revoke-tool";
    revoke.onclick = () => revokeTool(tool);
  }
}
async function loadAllowed() {
  const id = threadId;
  try {
    const resp = await fetch(allowedUrl());
    if (!resp.ok || id !== threadId) return;
    showAllowed((await resp.json()).tools || []);
  } catch (e) { /* the list stays as it was */ }
}
async function revokeTool(tool) {
  const resp = await fetch(allowedUrl(tool), { method: "DELETE" });
  if (!resp.ok && resp.status !== 404) errorCard("Revoke failed: " + (await failure(resp)));
  loadAllowed();
}
function newThread() {
  threadId = newId();
  reset();
  remember(null);
  setTitle(null);
}

async function openThread(id) {
  if (busy) return;
  threadId = id;
  remember(id);
  reset();
  const resp = await fetch("/api/threads/" + encodeURIComponent(id));
  if (!resp.ok) {
    errorCard(resp.status === 404 ? "No such thread: " + id : "Could not open the thread: " + (await failure(resp)));
    loadThreads();
    return;
  }
  const t = await resp.json();
  setTitle(t.title);
  loadAllowed();
  if (t.transcript && t.transcript.length) replay(t.transcript);
  else if (t.messages && t.messages.length) {
    for (const m of t.messages) {
      if (m.role === "user") { userCard(m.text); messages.push({ id: newId(), role: "user", content: m.text }); }
      else if (m.role === "assistant") { const a = assistantCard(); a.text = m.text; finishAnswer(a); messages.push({ id: newId(), role: "assistant", content: m.text }); }
      else if (m.role === "tool_call") noteCard("tool: " + m.text);
      else if (m.role === "tool") noteCard("result: " + m.text);
    }
  } else {
    noteCard("This thread's history lives in the provider's session; send a message to continue it.");
  }
  for (const r of (t.interrupted || [])) {
    const n = errorCard("Interrupted: the server stopped during this run (" + new Date(r.startedAt).toLocaleString() + ")"
      + (r.prompt ? ": " + r.prompt : "") + ". Send it again to retry.");
    n.dataset.testid = "interrupted-run";
  }
  loadThreads();
}

// A transcript: prompts, AG-UI frames and interrupt decisions in order.
function replay(items) {
  let view = newView();
  let run = null;
  const decided = new Set(items.filter((i) => i.kind === "decision").map((i) => i.interruptId));
  for (const item of items) {
    if (item.runId !== run) { run = item.runId; view = newView(); }
    if (item.kind === "prompt") {
      userCard(item.text);
      messages.push({ id: newId(), role: "user", content: item.text });
    } else if (item.kind === "decision") {
      decide(item.interruptId, item.result, item.reason, item.alwaysAllowed);
    } else if (item.kind === "frame") {
      const ev = item.event || {};
      // A parked interrupt nobody answered yet can still be answered.
      if (ev.type === "RUN_FINISHED" && ev.outcome && ev.outcome.type === "interrupt"
          && item === items[items.length - 1]) {
        view.live = ev.outcome.interrupts.every((it) => !decided.has(it.id)
          && (!it.expiresAt || Date.parse(it.expiresAt) > Date.now()));
      }
      onEvent(ev, view);
    }
  }
}

// --- the page ---------------------------------------------------------------
function closeMenu() { $("sidebar").classList.remove("open"); $("menu").setAttribute("aria-expanded", "false"); }
$("menu").onclick = () => {
  const open = !$("sidebar").classList.contains("open");
  $("sidebar").classList.toggle("open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  if (open) $("new").focus();
};
$("form").onsubmit = (e) => {
  e.preventDefault();
  const text = $("prompt").value.trim();
  if (!text || busy) return;
  $("prompt").value = "";
  userCard(text);
  messages.push({ id: newId(), role: "user", content: text });
  remember(threadId);
  runAgui({ threadId, runId: newId(), messages: messages.slice(), tools: [], context: [], state: {}, forwardedProps: {} });
};
$("prompt").onkeydown = (e) => {
  if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("form").requestSubmit(); }
};
$("stop").onclick = stop;
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  if (busy) { e.preventDefault(); stop(); } else closeMenu();
});
$("new").onclick = () => {
  if (busy) return;
  closeMenu();
  newThread();
  loadThreads();
  $("prompt").focus();
};

async function loadInfo() {
  const h = $("info");
  try {
    const info = await (await fetch("/api/info")).json();
    h.textContent = "";
    if (info.playground) h.appendChild(el("span", "badge", "playground"));
    h.appendChild(document.createTextNode(info.driver + " · " + (info.model || "default model")));
  } catch (e) { h.textContent = ""; }
}
// The URL `agent-adaptor serve` prints carries the token in its fragment
// (never sent in a request line or a Referer): trade it once for an
// HttpOnly session cookie, then drop it from the address bar.
async function signIn() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);
  const resp = await fetch("/api/session", {
    method: "POST",
    headers: { "Authorization": "Bearer " + decodeURIComponent(m[1]) },
  });
  if (!resp.ok) errorCard("Sign-in failed: the link's token is not this server's");
}
async function start() {
  await signIn();
  const probe = await fetch("/api/info");
  if (probe.status === 401) {
    errorCard("Not signed in: open the link that `agent-adaptor serve` printed (it carries the access token).");
    setBusy(true);
    $("stop").hidden = true;
    return;
  }
  loadInfo();
  const current = new URLSearchParams(location.search).get("thread");
  if (current) await openThread(current); else loadThreads();
  document.body.dataset.ready = "true";
}
start();
