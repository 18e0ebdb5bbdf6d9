// okuri's web console: the native API (/v1/) and two console reads (/console/api/), each
// called with the key typed in, as an Authorization header. The key stays in this tab's
// sessionStorage and never goes into a URL.
"use strict";

const KEY = "okuri-console-key";
const REFRESH_MS = 5000;
const QUEUES_MAX = 100;
const $ = (id) => document.getElementById(id);
let timer = null;
let browsing = null; // {queue, next}

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function call(method, path, body) {
  const key = sessionStorage.getItem(KEY) || "";
  const init = { method, headers: { Authorization: "Bearer " + key }, cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const doc = await r.json().catch(() => ({}));
  if (!r.ok) {
    const msg = (doc.error && doc.error.message) || r.statusText;
    throw new ApiError(r.status, msg);
  }
  return doc;
}

const q = (name) => encodeURIComponent(name);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function button(text, onClick, cls) {
  const b = el("button", text, cls);
  b.addEventListener("click", onClick);
  return b;
}

// `status`: the last refresh; `notice`: the last action's outcome (kept until the next one).
function status(text, isError, id = "status") {
  $(id).textContent = text;
  $(id).className = isError ? "error" : "status";
}

async function queueNames() {
  const names = [];
  let after = null;
  do {
    const params = new URLSearchParams({ limit: "100" });
    if (after) params.set("after", after);
    const page = await call("GET", "/v1/queues?" + params);
    names.push(...page.queues);
    after = page.next;
  } while (after && names.length < QUEUES_MAX);
  return names.slice(0, QUEUES_MAX);
}

// A small chart of up to the last hour (from the first sample the node kept): depth, sends and
// deletes, each scaled to its own maximum.
function chart(samples) {
  if (samples.length === 1) samples = [[samples[0][0] - 10000, ...samples[0].slice(1)], samples[0]];
  const ns = "http://www.w3.org/2000/svg";
  const w = 240, h = 40;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  const end = samples.length ? samples[samples.length - 1][0] : 0;
  const span = samples.length ? Math.min(3600000, Math.max(60000, end - samples[0][0])) : 3600000;
  const start = end - span;
  const title = document.createElementNS(ns, "title");
  title.textContent = `the last ${Math.round(span / 60000)} min`;
  svg.appendChild(title);
  [["depth", 1], ["sends", 2], ["deletes", 3]].forEach(([cls, i]) => {
    const top = Math.max(1, ...samples.map((s) => s[i]));
    const pts = samples.filter((s) => s[0] >= start).map((s) => {
      const x = ((s[0] - start) / span) * (w - 2) + 1;
      const y = h - 2 - (s[i] / top) * (h - 4);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("class", cls);
    line.setAttribute("points", pts.join(" "));
    const label = document.createElementNS(ns, "title");
    label.textContent = `${cls}: max ${top}`;
    line.appendChild(label);
    svg.appendChild(line);
  });
  return svg;
}

async function refresh() {
  try {
    const names = await queueNames();
    const rows = await Promise.all(names.map(async (name) => {
      const [queue, hist] = await Promise.all([
        call("GET", "/v1/queues/" + q(name)),
        call("GET", "/console/api/history?queue=" + q(name)).catch(() => ({ samples: [] })),
      ]);
      return [queue, hist.samples];
    }));
    const body = $("queues").querySelector("tbody");
    body.replaceChildren(...rows.map(([queue, samples]) => queueRow(queue, samples)));
    status("Updated " + new Date().toLocaleTimeString(), false);
  } catch (err) {
    if (err.status === 401) return logout("Your key was refused: " + err.message);
    status("Refresh failed: " + err.message, true);
  }
}

function queueRow(queue, samples) {
  const s = queue.stats || {};
  const tr = el("tr");
  tr.dataset.queue = queue.name;
  tr.append(el("td", queue.name, "name"));
  for (const k of ["visible", "leased", "delayed", "dead_lettered"]) {
    tr.append(el("td", s[k] || 0, "n " + k));
  }
  const c = el("td", undefined, "chart");
  c.append(chart(samples));
  tr.append(c);
  const actions = el("td");
  actions.append(
    button("Browse", () => browse(queue.name, null)),
    button("Purge", () => confirmThen(`Purge every message of ${queue.name}?`, async () => {
      await call("POST", `/v1/queues/${q(queue.name)}/purge`, {});
      return `Purged ${queue.name}.`;
    }), "purge"),
    button("Redrive", () => confirmThen(
      `Move every message of ${queue.name} back to the queue it was dead-lettered from?`,
      async () => {
        const r = await call("POST", `/v1/queues/${q(queue.name)}/redrive`, {});
        return `Moved ${r.moved || 0} message(s) out of ${queue.name}.`;
      }), "redrive"),
  );
  tr.append(actions);
  return tr;
}

function confirmThen(text, action) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  $("confirm-ok").onclick = async () => {
    dialog.close();
    try {
      status(await action(), false, "notice");
    } catch (err) {
      status(err.message, true, "notice");
    }
    refresh();
  };
  $("confirm-cancel").onclick = () => dialog.close();
  dialog.showModal();
}

// An item's body: `body` when it is UTF-8 text, else `body_base64`.
function bodyOf(item) {
  return item.body !== undefined ? item.body : "base64: " + (item.body_base64 || "");
}

async function browse(queue, after) {
  try {
    const params = new URLSearchParams({ limit: "20" });
    if (after) params.set("after", after);
    const page = await call("GET", `/v1/queues/${q(queue)}/messages?` + params);
    $("browse").hidden = false;
    $("browse-queue").textContent = queue;
    const body = $("messages").querySelector("tbody");
    const rows = page.items.map((it) => {
      const tr = el("tr");
      tr.append(
        el("td", it.id, "id"), el("td", it.state, "state"), el("td", it.attempts, "n attempts"),
        el("td", it.enqueued_at, "enqueued"), el("td", it.dead_letter_source || "", "source"),
        el("td", bodyOf(it), "body"),
      );
      return tr;
    });
    if (after) body.append(...rows); else body.replaceChildren(...rows);
    if (!rows.length && !after) {
      const empty = el("tr");
      empty.append(el("td", "No messages."));
      body.append(empty);
    }
    browsing = { queue, next: page.next };
    $("browse-more").hidden = !page.next;
  } catch (err) {
    status("Browse failed: " + err.message, true, "notice");
  }
}

async function loadKeys() {
  const body = $("keys").querySelector("tbody");
  try {
    const doc = await call("GET", "/console/api/keys");
    body.replaceChildren(...doc.keys.map((k) => {
      const tr = el("tr");
      tr.append(el("td", k.id), el("td", k.kind), el("td", k.role), el("td", k.namespace || "(all)"));
      return tr;
    }));
    $("keys-note").textContent = "Read-only; manage keys with `okuri keys`.";
  } catch (err) {
    body.replaceChildren();
    $("keys-note").textContent = err.message;
  }
}

function show(loggedIn) {
  $("login").hidden = loggedIn;
  $("app").hidden = !loggedIn;
  $("logout").hidden = !loggedIn;
}

function logout(message) {
  sessionStorage.removeItem(KEY);
  clearInterval(timer);
  timer = null;
  show(false);
  $("login-error").textContent = message || "";
}

async function start() {
  show(true);
  await Promise.all([refresh(), loadKeys()]);
  timer = setInterval(refresh, REFRESH_MS);
}

async function login(event) {
  event.preventDefault();
  const key = $("key").value.trim();
  $("key").value = "";
  sessionStorage.setItem(KEY, key);
  try {
    await call("GET", "/v1/queues?limit=1");
  } catch (err) {
    sessionStorage.removeItem(KEY);
    $("login-error").textContent = err.status === 401
      ? "That key was refused: " + err.message
      : "Could not log in: " + err.message;
    return;
  }
  $("login-error").textContent = "";
  start();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", login);
  $("logout").addEventListener("click", () => logout(""));
  $("browse-more").addEventListener("click", () => browsing && browse(browsing.queue, browsing.next));
  $("browse-close").addEventListener("click", () => { $("browse").hidden = true; });
  if (sessionStorage.getItem(KEY)) start();
});
