// The approvals page (boxmaker serve --approvals): a live inbox of the calls that wait for
// a person. Everything shown comes from the gate through this page's server, already escaped
// for a person (hidden and control characters as \u{…}); it is put in the page as text
// (textContent), never as markup. Every decision carries the login's CSRF token and the
// digest of the exact call shown, so the gate refuses a decision on anything else.
"use strict";
(() => {
  const csrf = document.querySelector('meta[name="csrf"]').content;
  const $ = (id) => document.getElementById(id);
  const pendingEl = $("pending");
  const historyEl = $("history");
  const rememberedEl = $("remembered");
  const cardT = $("card-t").content.firstElementChild;
  const remT = $("remembered-t").content.firstElementChild;
  const histT = $("history-t").content.firstElementChild;
  const HISTORY = 200;
  const cards = new Map(); // approval id -> {item, el, cd, busy}
  const latest = new Map(); // approval id -> the number of its latest change applied
  let listing = 0; // while the first listing loads: how many wait in all
  let offset = 0; // the gate's clock less ours, in seconds
  let next = 0; // the last change seen
  // When each approval was first on screen (ms since the epoch), for measuring.
  window.__seen = {};
  window.__ready = false;

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const nowS = () => Date.now() / 1000 + offset;
  const q = (el, sel) => el.querySelector(sel);
  const set = (el, sel, text) => { q(el, sel).textContent = text; };
  const when = (t) => new Date(t * 1000).toLocaleString();
  const taint = (i) => i.class + (i.untrusted ? ", has seen untrusted content" : "");
  const hidden = (n) => n === 0 ? "" :
    `holds ${n} hidden or control character${n > 1 ? "s" : ""}, shown as \\u{…}`;
  const status = (text) => { $("status").textContent = text; };

  function left(s) {
    if (s <= 0) return "expired";
    const m = Math.floor(s / 60);
    const r = Math.floor(s % 60);
    return `${m}:${String(r).padStart(2, "0")} left`;
  }

  // A card is built in full when it comes near the screen or takes the focus: ten thousand
  // waiting calls list at once as their tool and exact arguments, and each gets its facts
  // and buttons when a person can see it.
  const FULL_AT_ONCE = 50;
  // Cards sit in chunks of a hundred, each `content-visibility: auto`: the browser styles
  // and lays out only the chunks near the screen, and says when one comes near (the event
  // does not bubble; a capturing listener sees it).
  const CHUNK = 100;
  pendingEl.addEventListener("contentvisibilityautostatechange", (e) => {
    if (e.skipped || !e.target.classList.contains("chunk")) return;
    for (const el of e.target.children) fill(cards.get(el.dataset.id));
  }, { capture: true });

  function place(el, target) {
    let chunk = target.lastElementChild;
    if (!chunk || chunk.childElementCount >= CHUNK) {
      chunk = document.createElement("div");
      chunk.className = "chunk";
      target.appendChild(chunk);
    }
    chunk.appendChild(el);
  }

  // The card after (`dir` 1) or before (-1) `card`, across chunks.
  function beside(card, dir) {
    const step = (el) => (dir > 0 ? el.nextElementSibling : el.previousElementSibling);
    const near = step(card);
    if (near) return near;
    let chunk = step(card.parentElement);
    while (chunk && chunk.childElementCount === 0) chunk = step(chunk);
    if (!chunk) return null;
    return dir > 0 ? chunk.firstElementChild : chunk.lastElementChild;
  }

  function makeLight(item) {
    const el = document.createElement("article");
    el.className = "card light";
    el.tabIndex = 0;
    el.dataset.id = item.id;
    const head = document.createElement("header");
    const tool = document.createElement("span");
    tool.className = "tool";
    tool.textContent = item.tool;
    head.appendChild(tool);
    const args = document.createElement("pre");
    args.className = "args";
    args.textContent = item.arguments;
    el.append(head, args);
    return { item, el, cd: null, busy: false, light: true };
  }

  // Gives a light card its facts and buttons.
  function fill(c) {
    if (!c || !c.light) return;
    const full = makeCard(c.item);
    c.el.replaceChildren(...full.el.childNodes);
    c.el.classList.remove("light");
    c.el.setAttribute("aria-label", full.el.getAttribute("aria-label"));
    c.cd = q(c.el, ".countdown");
    c.light = false;
  }

  // What an approval covers beyond its text, one item per file (text, never markup); a
  // file that changed since the same call was approved is marked.
  function covers(el, lines) {
    const ul = q(el, ".covers");
    ul.replaceChildren();
    for (const line of lines || []) {
      const li = document.createElement("li");
      li.textContent = line;
      if (line.includes("CHANGED since")) li.className = "changed";
      ul.appendChild(li);
    }
  }

  function makeCard(item) {
    const el = cardT.cloneNode(true);
    el.dataset.id = item.id;
    set(el, ".tool", item.tool);
    set(el, ".args", item.arguments);
    const note = q(el, ".hidden-note");
    note.textContent = hidden(item.hidden);
    note.hidden = item.hidden === 0;
    covers(el, item.covers);
    set(el, ".session", `${item.session} (call ${item.call})`);
    set(el, ".taint", taint(item));
    set(el, ".why", item.why);
    // Where a value came from, a destination's clearance: text only, escaped by the server.
    const concerns = q(el, ".concerns");
    for (const line of item.concerns || []) {
      const li = document.createElement("li");
      li.textContent = line;
      concerns.appendChild(li);
    }
    concerns.hidden = !(item.concerns || []).length;
    set(el, ".expires", when(item.expires));
    set(el, ".id", `approval ${item.id}`);
    el.setAttribute("aria-label", `${item.tool} call waiting for your approval`);
    const c = { item, el, cd: q(el, ".countdown"), busy: false };
    if (item.rememberable === false) {
      for (const b of el.querySelectorAll(".session-approve")) b.disabled = true;
      set(el, ".msg", "A file this call names cannot be bound to an approval: approve it once.");
    }
    if (item.cut) {
      for (const b of el.querySelectorAll(".approve, .session-approve")) b.disabled = true;
      set(el, ".msg", "The arguments are too long to show here in full: decide with `boxmaker approvals` and `boxmaker approve`.");
    }
    c.cd.textContent = left(item.expires - nowS());
    return c;
  }

  function counted() {
    const n = Math.max(cards.size, listing);
    $("count").textContent = String(n);
    $("empty").hidden = n > 0;
  }

  const histories = new Map(); // approval id -> {li, change}
  // One line per approval, at its latest change, newest first.
  function addHistory(item) {
    const had = histories.get(item.id);
    if (had && had.change >= item.change) return;
    if (had) had.li.remove();
    const li = histT.cloneNode(true);
    set(li, ".state", item.state);
    li.classList.add(item.state);
    set(li, ".tool", item.tool);
    set(li, ".args", item.arguments);
    const parts = [`session ${item.session}`];
    if (item.by) parts.push(`by ${item.by}`);
    if (item.via) parts.push(`(${item.via})`);
    if (item.decided) parts.push(when(item.decided));
    if (item.grant) parts.push(`remembered as ${item.grant}`);
    if (item.note) parts.push(`note: ${item.note}`);
    set(li, ".meta", parts.join(" · "));
    historyEl.insertBefore(li, historyEl.firstChild);
    histories.set(item.id, { li, change: item.change });
    while (historyEl.children.length > HISTORY) {
      const last = historyEl.lastChild;
      for (const [id, h] of histories) if (h.li === last) histories.delete(id);
      last.remove();
    }
  }

  // Applies changes, oldest first: a pending one gets a card, a decided one leaves the
  // inbox for the history. A change older than one already applied to the same approval
  // (a page of the listing that crossed a decision) is dropped. `into` (the listing) builds
  // all but the first cards light.
  function apply(items, into) {
    const target = into || pendingEl;
    let n = cards.size;
    for (const item of items) {
      if ((latest.get(item.id) || 0) >= item.change) continue;
      latest.set(item.id, item.change);
      const had = cards.get(item.id);
      if (item.state === "pending") {
        if (had) continue;
        const c = into && n++ >= FULL_AT_ONCE ? makeLight(item) : makeCard(item);
        cards.set(item.id, c);
        place(c.el, target);
        if (!(item.id in window.__seen)) window.__seen[item.id] = Date.now();
      } else {
        if (had) {
          const focused = had.el.contains(document.activeElement);
          const after = beside(had.el, 1) || beside(had.el, -1);
          const chunk = had.el.parentElement;
          had.el.remove();
          if (chunk && chunk.childElementCount === 0) chunk.remove();
          cards.delete(item.id);
          if (focused && after) after.focus();
        }
        addHistory(item);
      }
    }
    counted();
  }

  function renderRemembered(list) {
    rememberedEl.replaceChildren();
    const now = nowS();
    for (const g of list) {
      if (g.expires !== null && g.expires <= now) continue;
      const el = remT.cloneNode(true);
      el.dataset.grant = g.id;
      set(el, ".tool", g.tool);
      set(el, ".expires", g.expires === null ? "never expires" : `until ${when(g.expires)}`);
      set(el, ".args", g.arguments);
      covers(el, g.covers);
      const note = q(el, ".hidden-note");
      note.textContent = hidden(g.hidden);
      note.hidden = g.hidden === 0;
      set(el, ".session", g.session);
      set(el, ".taint", g.max_class);
      set(el, ".approval", `${g.approval} (${g.id})`);
      rememberedEl.appendChild(el);
    }
  }

  async function post(path, body) {
    const r = await fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
    let answer = {};
    try { answer = await r.json(); } catch (_) { /* an empty answer */ }
    return { ok: r.ok, status: r.status, answer };
  }

  async function decide(id, choice) {
    const c = cards.get(id);
    if (!c || c.busy) return;
    fill(c);
    let minutes = null;
    if (choice === "approve_for_session") {
      minutes = Number(q(c.el, ".minutes").value);
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > 1440) {
        set(c.el, ".msg", "Say from 1 to 1440 minutes.");
        return;
      }
    }
    c.busy = true;
    c.el.classList.add("busy");
    set(c.el, ".msg", "");
    try {
      const { ok, answer } = await post("/api/decide", {
        approval: id,
        choice,
        minutes,
        call_sha256: c.item.call_sha256,
        class: c.item.class,
        untrusted: c.item.untrusted,
      });
      if (ok) {
        apply([answer.item]);
        return;
      }
      set(c.el, ".msg", answer.error || "The decision was refused.");
    } catch (e) {
      set(c.el, ".msg", `The page's server did not answer: ${e}`);
    }
    c.busy = false;
    c.el.classList.remove("busy");
  }

  async function revoke(grant, el) {
    const { ok, answer } = await post("/api/revoke", { grant });
    if (ok) el.remove();
    else set(el, ".msg", answer.error || "The revocation was refused.");
  }

  pendingEl.addEventListener("click", (e) => {
    const b = e.target.closest("button");
    const card = e.target.closest(".card");
    if (!b || !card) return;
    const choice = b.classList.contains("approve") ? "approve_once"
      : b.classList.contains("session-approve") ? "approve_for_session"
      : b.classList.contains("refuse") ? "refuse" : null;
    if (choice) decide(card.dataset.id, choice);
  });
  pendingEl.addEventListener("focusin", (e) => {
    const card = e.target.closest(".card");
    if (card) fill(cards.get(card.dataset.id));
  });
  rememberedEl.addEventListener("click", (e) => {
    const b = e.target.closest("button.revoke");
    const card = e.target.closest(".card");
    if (b && card) revoke(card.dataset.grant, card);
  });
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target.tagName === "INPUT") return;
    const active = document.activeElement;
    const card = active && active.closest ? active.closest("#pending .card") : null;
    if (e.key === "j" || e.key === "k") {
      const first = pendingEl.querySelector(".card");
      if (!first) return;
      const to = card ? (beside(card, e.key === "j" ? 1 : -1) || card) : first;
      to.focus();
      e.preventDefault();
      return;
    }
    if (!card) return;
    const choice = { a: "approve_once", s: "approve_for_session", r: "refuse" }[e.key];
    if (!choice) return;
    e.preventDefault();
    decide(card.dataset.id, choice);
  });
  $("logout").addEventListener("click", async () => {
    await post("/logout", {});
    location.reload();
  });

  setInterval(() => {
    const now = nowS();
    for (const c of cards.values()) {
      if (c.light) continue;
      const s = c.item.expires - now;
      c.cd.textContent = left(s);
      if (s <= 0 && !c.el.classList.contains("expired")) {
        c.el.classList.add("expired");
        for (const b of c.el.querySelectorAll("button")) b.disabled = true;
      }
    }
  }, 1000);

  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  async function getJSON(path) {
    const r = await fetch(path, { credentials: "same-origin" });
    if (r.status === 401) { location.reload(); throw new Error("logged out"); }
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || `${r.status}`);
    return body;
  }

  // When the listing reached the screen, in ms from the page's start (for measuring).
  window.__timing = {};
  async function start() {
    let s;
    for (;;) {
      try {
        window.__timing.asked = performance.now();
        s = await getJSON("/api/snapshot");
        break;
      } catch (e) {
        status(`the gate is not answering (${e.message}); trying again`);
        await sleep(1000);
      }
    }
    window.__timing.fetched = performance.now();
    offset = s.now - Date.now() / 1000;
    next = s.head;
    listing = s.pending_total;
    for (const item of s.history.slice().reverse()) addHistory(item);
    let frag = document.createDocumentFragment();
    apply(s.pending, frag);
    pendingEl.appendChild(frag);
    renderRemembered(s.remembered);
    counted();
    window.__ready = true;
    status("live: calls appear here as they ask");
    await frame();
    window.__timing.first = performance.now();
    // Changes from now on, while the rest of the listing comes in.
    poll();
    // Each page is asked for before the one before it is built, so the gate and the
    // browser work at the same time.
    const ask = (after) => getJSON(`/api/pending?after=${after}`);
    let after = s.pending_after;
    let coming = s.more ? ask(after) : null;
    while (coming) {
      let page;
      try {
        page = await coming;
      } catch (e) {
        status(`the gate is not answering (${e.message}); trying again`);
        await sleep(1000);
        coming = ask(after);
        continue;
      }
      after = page.after;
      coming = page.more ? ask(after) : null;
      frag = document.createDocumentFragment();
      apply(page.items, frag);
      pendingEl.appendChild(frag);
    }
    listing = 0;
    counted();
    window.__listed = true;
    await frame();
    window.__timing.all = performance.now();
  }

  async function poll() {
    for (;;) {
      try {
        const r = await fetch(`/api/updates?after=${next}`, { credentials: "same-origin" });
        if (r.status === 401) { location.reload(); return; }
        const u = await r.json();
        if (!r.ok) { status(u.error); await sleep(1000); continue; }
        offset = u.now - Date.now() / 1000;
        next = u.next;
        apply(u.items);
        if (u.remembered) renderRemembered(u.remembered);
        status("live: calls appear here as they ask");
      } catch (e) {
        status("the page's server is not answering; trying again");
        await sleep(1000);
      }
    }
  }

  start();
})();
