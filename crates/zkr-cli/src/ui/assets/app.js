// zkr ui: renders the views `zkr ui` pushes as server-sent events. Read-only.
"use strict";

const SECTIONS = [
  ["conflict", "Conflicts"], ["lock", "Locks"], ["leader", "Leaders"], ["semaphore", "Semaphores"], ["queue", "Queues"],
  ["service", "Services"], ["barrier", "Barriers"], ["group", "Groups"], ["counter", "Counters"],
  ["config", "Config"],
];
let view = null;
let receivedAt = 0;
let token = sessionStorage.getItem("zkr-ui-token") || "";
let source = null;

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

// The server's clock now: the view's time plus what passed since it came.
const now = () => (view ? view.now_ms + (Date.now() - receivedAt) : Date.now());

function age(ms) {
  if (ms === null || ms === undefined) return "";
  let s = Math.max(0, Math.floor((now() - ms) / 1000));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
}
const ageSpan = (ms, prefix, suffix, title) =>
  `<span class="age" data-ms="${ms}" data-prefix="${esc(prefix || "")}" data-suffix="${esc(suffix || "")}"${title ? ` title="${esc(title)}"` : ""}>${esc((prefix || "") + age(ms) + (suffix || ""))}</span>`;
// A contender's node name without Curator's protected prefix or kazoo's UUID: `lock-0000000007`.
const shortNode = (node) => node.replace(/^_c_[0-9a-f-]{36}-/, "").replace(/^[0-9a-f]{32}/, "");

// A holder, waiter, participant or member as one row: its id (or its node), how long, and
// its session and fencing token.
function who(c, mark, role, holding) {
  let time;
  if (holding && c.since_ms !== null) time = ageSpan(c.since_ms, "held ");
  else if (holding) time = ageSpan(c.created_ms, "held ≤ ", "", "held since zkr ui started, and at most since it queued");
  else if (role === "waiter") time = ageSpan(c.created_ms, "waiting ");
  else time = ageSpan(c.created_ms, "joined ", " ago");
  const mode = c.mode ? `<span class="tag${holding ? " hold" : ""}">${esc(c.mode)}</span>` : "";
  const label = c.id ? esc(c.id) : `<span class="mono">${esc(shortNode(c.node))}</span>`;
  return `<li class="who${holding ? " holding" : ""}" data-role="${role}" data-node="${esc(c.node)}" data-session="${esc(c.session)}" title="${esc(c.node)}">
    <span class="n">${mark}</span><span class="id" data-field="id">${label}${mode}</span>${time}
    <span class="meta">session <span data-field="session">${esc(c.session)}</span> · token <span data-field="token">${c.fencing_token}</span></span></li>`;
}

// A path as the page shows it: relative to the root.
const rel = (path) => {
  const root = view.root === "/" ? "" : view.root;
  return root && path.startsWith(root + "/") ? path.slice(root.length) : path;
};
// The plain tree: each node's own name, indented by its depth below the root.
const depth = (path) => Math.max(0, rel(path).split("/").length - 2);
const leafName = (path) => (path === view.root ? path : rel(path).split("/").pop() || "/");
const HOLDING = new Set(["holder", "leader", "lease"]);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

const cardHead = (r, sub) =>
  `<h3 title="${esc(r.path)}">${esc(rel(r.path))}</h3><div class="sub">${sub}${r.layout === "kazoo" ? ' <span class="tag">kazoo</span>' : ""}</div>`;

const RENDER = {
  lock(r) {
    const kind = r.read_write ? "read-write lock" : "lock";
    const rows = r.holders.map((c) => who(c, "★", "holder", true))
      .concat(r.waiters.map((c, i) => who(c, i + 1, "waiter", false))).join("");
    const free = r.holders.length === 0 ? '<p class="free">free</p>' : "";
    return cardHead(r, `${kind} · ${r.waiters.length} waiting`) + free + `<ol>${rows}</ol>`;
  },
  semaphore(r) {
    const of = r.max !== null ? ` of ${r.max}` : "";
    const rows = r.leases.map((c) => who(c, "●", "lease", true))
      .concat(r.waiters.map((c, i) => who(c, i + 1, "waiter", false))).join("");
    return cardHead(r, `semaphore · ${r.leases.length}${of} ${r.leases.length === 1 && !of ? "lease" : "leases"} held · ${r.waiters.length} waiting`) + `<ol>${rows}</ol>`;
  },
  leader(r) {
    const rows = r.participants.map((c, i) =>
      who(c, i === 0 ? "★" : i, i === 0 ? "leader" : "participant", i === 0)).join("");
    return cardHead(r, `leader election · ${plural(r.participants.length, "participant")}`) + `<ol>${rows}</ol>`;
  },
  queue(r) {
    const oldest = r.oldest_ms !== null ? `oldest item ${ageSpan(r.oldest_ms, "", " old")}` : "empty";
    const locked = r.locked.length
      ? `<table><tr><th>item</th><th>consumer session</th><th>locked</th></tr>${r.locked.map((l) =>
          `<tr data-role="item-lock"><td class="mono">${esc(l.item)}</td><td class="mono">${esc(l.session)}</td><td>${ageSpan(l.since_ms, "")}</td></tr>`).join("")}</table>`
      : "";
    return cardHead(r, `queue · ${oldest}`) + `<div class="big" data-field="depth">${r.depth}</div>` +
      `<div class="sub">items waiting · ${r.locked.length} being worked on</div>` + locked;
  },
  service(r) {
    const up = r.instances.filter((i) => i.enabled).length;
    const rows = r.instances.map((i) => `<tr data-role="instance"><td><span class="dot${i.enabled ? "" : " off"}"></span>${esc(i.id)}</td>
      <td class="mono">${esc(i.address)}${i.port !== null ? ":" + i.port : ""}${i.ssl_port !== null ? " (tls " + i.ssl_port + ")" : ""}</td>
      <td>${i.enabled ? "enabled" : "disabled"}</td><td>${ageSpan(i.registered_ms, "")}</td></tr>`).join("");
    return cardHead(r, `service <b>${esc(r.name)}</b> · ${up} of ${r.instances.length} enabled`) +
      `<table><tr><th>instance</th><th>address</th><th>state</th><th>up</th></tr>${rows}</table>`;
  },
  barrier(r) {
    const rows = r.members.map((c, i) => who(c, i + 1, "member", false)).join("");
    return cardHead(r, `double barrier · ${plural(r.members.length, "member")} · ${r.ready ? "ready (quota met)" : "waiting for the quota"}`) + `<ol>${rows}</ol>`;
  },
  group(r) {
    const rows = r.members.map((c, i) => who(c, i + 1, "member", false)).join("");
    return cardHead(r, `group · ${plural(r.members.length, "member")}`) + `<ol>${rows}</ol>`;
  },
  conflict(r) {
    const rows = r.contenders.map((c, i) => who(c, i + 1, "conflict", false)).join("");
    const layouts = r.layouts.map((l) => `<li>${esc(l)}</li>`).join("");
    return cardHead(r, `<span class="tag conflict">conflict</span> ${plural(r.layouts.length, "layout")} at one path: each may have a holder`) +
      `<ul class="layouts">${layouts}</ul><ol>${rows}</ol>`;
  },
  counter(r) {
    return cardHead(r, `counter · ${r.bits}-bit`) + `<div class="big" data-field="value">${r.value}</div>`;
  },
  config(r) {
    const value = r.value !== null ? `<pre class="mono" data-field="value">${esc(r.value)}</pre>`
      : `<span class="hidden-value" title="zkr ui --show-values shows it">••••••</span>`;
    return cardHead(r, `config · version <b data-field="version">${r.version}</b> · changed ${ageSpan(r.mtime_ms, "", " ago")} · ${r.size} bytes`) + value;
  },
};

function matches(r, f) {
  if (!f) return true;
  return JSON.stringify(r).toLowerCase().includes(f);
}

function render() {
  if (!view) return;
  const f = $("filter").value.trim().toLowerCase();
  document.body.classList.toggle("stale", view.stale);
  const state = $("state");
  const label = view.stale ? (view.connection === "connected" ? "stale" : `stale · ${view.connection}`) : "live";
  state.textContent = label;
  state.dataset.state = view.stale ? "stale" : "live";
  state.className = "pill " + (view.stale ? (view.connection === "connected" ? "pill-stale" : "pill-down") : "pill-live");
  $("root").textContent = view.root;
  $("counts").textContent = `${view.nodes} nodes · ${view.recipes.length + view.leaves_more} recipes · ${view.sessions.length} sessions`;
  const open = new Set([...document.querySelectorAll("details[open]")].map((d) => d.id));
  let html = "";
  let nav = "";
  for (const [kind, title] of SECTIONS) {
    const list = view.recipes.filter((r) => r.kind === kind && matches(r, f));
    if (!list.length) continue;
    nav += `<a href="#s-${kind}">${title} <b>${list.length}</b></a>`;
    const more = kind === "config" && view.leaves_more
      ? `<p class="muted" data-field="leaves-more">… and ${view.leaves_more} more counters and config nodes (the first 2,000 by path are shown)</p>` : "";
    html += `<section id="s-${kind}"><h2>${title}</h2>${list.map((r) =>
      `<article class="card" data-kind="${kind}" data-path="${esc(r.path)}">${RENDER[kind](r)}</article>`).join("")}${more}</section>`;
  }
  const sessions = view.sessions.filter((s) => matches(s, f));
  if (sessions.length) {
    nav += `<a href="#s-sessions">Sessions <b>${sessions.length}</b></a>`;
    html += `<section id="s-sessions"><h2>Sessions</h2><article class="card" data-kind="sessions"><table>
      <tr><th>session</th><th>holds or waits for</th></tr>${sessions.map((s) =>
      `<tr data-session="${esc(s.session)}"><td class="mono">${esc(s.session)}</td><td>${s.roles.map((r) =>
        `<div class="role"><span class="tag${HOLDING.has(r.role) ? " hold" : ""}">${esc(r.role)}</span><span class="mono" title="${esc(r.path)}">${esc(rel(r.path))}</span>${r.count > 1 ? ` <span class="muted">×${r.count}</span>` : ""}</div>`).join("")}</td></tr>`).join("")}
      </table></article></section>`;
  }
  html = html ? `<div class="board">${html}</div>` : "";
  const tree = view.tree.filter((n) => !f || n.path.toLowerCase().includes(f));
  if (tree.length) {
    const more = view.tree_more ? `<p class="muted">… and ${view.tree_more} more</p>` : "";
    html += `<details id="other"><summary>Other nodes (${tree.length + view.tree_more})</summary><table>
      <tr><th>path</th><th>children</th><th>bytes</th><th>session</th></tr>${tree.map((n) =>
      `<tr><td class="mono" title="${esc(n.path)}"><span data-depth="${depth(n.path)}">${esc(leafName(n.path))}</span></td><td>${n.children}</td><td>${n.size}</td><td class="mono">${esc(n.session || "")}</td></tr>`).join("")}</table>${more}</details>`;
  }
  if (!html) html = `<p class="muted">${view.initialized ? "Nothing under " + esc(view.root) + (f ? " matches the filter." : " yet.") : "Reading the tree…"}</p>`;
  $("main").innerHTML = html;
  // Indentation through the CSSOM: the page's CSP forbids style attributes in markup.
  for (const node of $("main").querySelectorAll("[data-depth]")) node.style.paddingLeft = `${node.dataset.depth}rem`;
  $("summary").innerHTML = nav;
  for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
  $("updated").textContent = "Updated " + new Date(view.now_ms).toLocaleTimeString() + ".";
}

// Ages move on between views.
function tick() {
  for (const span of document.querySelectorAll("[data-ms]")) {
    span.textContent = span.dataset.prefix + age(Number(span.dataset.ms)) + span.dataset.suffix;
  }
}

// A change: the recipes new or changed replace theirs, those gone go; the rest is sent whole.
function apply(patch) {
  const gone = new Set(patch.remove.concat(patch.upsert.map((r) => r.path)));
  const recipes = view.recipes.filter((r) => !gone.has(r.path)).concat(patch.upsert);
  recipes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const key of ["now_ms", "connection", "stale", "initialized", "nodes", "sessions", "tree_more", "leaves_more"]) {
    view[key] = patch[key];
  }
  if (patch.tree) view.tree = patch.tree;
  view.recipes = recipes;
}

function disconnected() {
  const state = $("state");
  state.textContent = "disconnected from zkr ui";
  state.dataset.state = "down";
  state.className = "pill pill-down";
  document.body.classList.add("stale");
}

function connect() {
  if (source) source.close();
  source = new EventSource("/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
  source.addEventListener("view", (e) => {
    view = JSON.parse(e.data);
    receivedAt = Date.now();
    render();
  });
  source.addEventListener("patch", (e) => {
    if (!view) return;
    apply(JSON.parse(e.data));
    receivedAt = Date.now();
    render();
  });
  source.onerror = () => disconnected();
}

async function start() {
  const response = await fetch("/api/view", { headers: token ? { Authorization: "Bearer " + token } : {} }).catch(() => null);
  if (response && response.status === 401) {
    $("login").hidden = false;
    $("empty").textContent = token ? "That token was refused." : "This zkr ui needs its token.";
    return;
  }
  $("login").hidden = true;
  connect();
}

document.addEventListener("DOMContentLoaded", () => {
  $("filter").addEventListener("input", render);
  // A session's view: a click on a session id filters the page down to what it holds.
  $("main").addEventListener("click", (e) => {
    const session = e.target.closest("[data-field=session], tr[data-session] > td.mono");
    if (!session) return;
    $("filter").value = session.textContent.trim();
    render();
    window.scrollTo(0, 0);
  });
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value;
    sessionStorage.setItem("zkr-ui-token", token);
    start();
  });
  setInterval(tick, 1000);
  start();
});
