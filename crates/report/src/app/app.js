// ferrofluid's profile page: renders any mode from the metrics the document declares
// (docs/ui.md). Served live (`--ui`: polls the JSON endpoints) or with the profile embedded
// (`window.FF_PROFILE`).
"use strict";
(function () {
  const $ = (id) => document.getElementById("ff-" + id);
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const EMBEDDED = window.FF_PROFILE || null;
  const REFRESH_MS = 1000;
  const ROW = 17;
  const MAX_CHILD_ROWS = 200;
  const MAX_HOT_ROWS = 300;

  const st = {
    doc: null, status: null, view: "flame", metric: 0, threads: "merged", inverted: false,
    zoom: [], search: null, expanded: new Set(["0"]), autoExpanded: false, ended: false,
    rects: [], tree: null,
  };

  // ---- numbers -------------------------------------------------------------------------
  function fmt(v, unit) {
    if (unit === "nanoseconds") {
      const a = Math.abs(v);
      if (a >= 1e9) return (v / 1e9).toFixed(2) + " s";
      if (a >= 1e6) return (v / 1e6).toFixed(2) + " ms";
      if (a >= 1e3) return (v / 1e3).toFixed(1) + " µs";
      return Math.round(v) + " ns";
    }
    if (unit === "bytes") {
      const a = Math.abs(v);
      if (a >= 1 << 30) return (v / (1 << 30)).toFixed(2) + " GiB";
      if (a >= 1 << 20) return (v / (1 << 20)).toFixed(2) + " MiB";
      if (a >= 1 << 10) return (v / (1 << 10)).toFixed(1) + " KiB";
      return v + " B";
    }
    return Math.round(v).toLocaleString("en-US");
  }
  const pct = (v, of) => (of > 0 ? (100 * v / of).toFixed(1) : "0.0") + "%";
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  // ---- the model: trees of {key, name, full, own[], tot[], kids[]} ---------------------
  function metricsOf(doc) {
    return (doc.metrics || []).map((m) => ({ name: m.name, unit: m.unit }));
  }
  // The node's own value of metric `m`: what it counted itself, without its callees.
  function own(node, m) {
    switch (m.name) {
      case "calls": return node.calls || 0;
      case "time": return node.self_ns || 0;
      case "cpu_time": {
        if (node.cpu_self_ns !== undefined) return node.cpu_self_ns;
        let v = node.cpu_ns || 0;
        for (const k of node.children || []) v -= k.cpu_ns || 0;
        return Math.max(0, v);
      }
      default: return node[m.name] || 0;
    }
  }
  function simpleClass(c) {
    const dot = c.lastIndexOf(".");
    return dot < 0 ? c : c.slice(dot + 1);
  }
  function newNode(key, name, full, n) {
    return { key, name, full, own: new Float64Array(n), tot: new Float64Array(n), kids: [], map: null, flags: "" };
  }
  function child(parent, key, name, full, n) {
    if (!parent.map) {
      parent.map = new Map();
      for (const k of parent.kids) parent.map.set(k.key, k);
    }
    let c = parent.map.get(key);
    if (!c) {
      c = newNode(key, name, full, n);
      parent.kids.push(c);
      parent.map.set(key, c);
    }
    return c;
  }
  function describe(node) {
    if (node.kind === "overflow") return ["<overflow>", "<overflow>", "(calls beyond the node budget or depth bound)"];
    if (node.kind === "elided") return ["<elided>", `… ${node.elided} light callees`, `${node.elided} callees below the report's cutoff, lumped`];
    const full = node.class + "." + node.method + node.descriptor;
    return [full, simpleClass(node.class) + "." + node.method, full];
  }
  // Adds the document subtree `src` into the model node `dst`.
  function addInto(dst, src, ms) {
    for (let i = 0; i < ms.length; i++) dst.own[i] += own(src, ms[i]);
    if (src.waiting) dst.flags = "waiting";
    if (src.probes_dropped) dst.flags = "probes removed";
    for (const k of src.children || []) {
      const [key, name, full] = describe(k);
      addInto(child(dst, key, name, full, ms.length), k, ms);
    }
  }
  function totals(node) {
    node.tot.set(node.own);
    for (const k of node.kids) {
      totals(k);
      for (let i = 0; i < node.tot.length; i++) node.tot[i] += k.tot[i];
    }
  }
  // A thread's group: its name with the last run of digits as `*` (pool-1-thread-7 and
  // pool-1-thread-9 -> pool-1-thread-*), so a pool's threads share one.
  function threadGroup(name) {
    return name.replace(/\d+(?=\D*$)/, "*");
  }
  function build(doc, ms, how, inverted) {
    const threads = doc.threads || [];
    const n = ms.length;
    let root;
    if (how === "merged") {
      root = newNode("all", "all threads", "all threads (" + threads.length + ", merged)", n);
      for (const t of threads) addInto(root, t.root, ms);
    } else if (how === "each") {
      root = newNode("all", "all threads", "all threads (" + threads.length + ")", n);
      threads.forEach((t, i) => addInto(child(root, "thread#" + i, t.name, "thread " + t.name, n), t.root, ms));
    } else if (how === "groups") {
      const groups = new Map();
      for (const t of threads) {
        const g = threadGroup(t.name);
        if (!groups.has(g)) groups.set(g, []);
        groups.get(g).push(t);
      }
      root = newNode("all", "all threads", `all threads (${threads.length}, ${groups.size} groups)`, n);
      for (const [g, ts] of groups) {
        const one = ts.length === 1;
        const name = one ? ts[0].name : g;
        const node = child(root, "group#" + g, name, one ? "thread " + name : `threads ${g} (${ts.length}, merged)`, n);
        for (const t of ts) addInto(node, t.root, ms);
      }
    } else {
      const t = threads[Number(how)];
      root = newNode("all", t ? t.name : "?", t ? "thread " + t.name : "?", n);
      if (t) addInto(root, t.root, ms);
    }
    totals(root);
    return inverted ? invert(root, n) : root;
  }
  // Callers' view: each node's own values go up the path from it to the root, reversed.
  function invert(root, n) {
    const inv = newNode("all", root.name, root.full + ", inverted", n);
    const path = [];
    const walk = (node) => {
      let any = false;
      for (let i = 0; i < n; i++) if (node.own[i] !== 0) { any = true; break; }
      if (any && path.length) {
        let cur = inv;
        for (let d = path.length - 1; d >= 0; d--) {
          const p = path[d];
          cur = child(cur, p.key, p.name, p.full, n);
          for (let i = 0; i < n; i++) cur.tot[i] += node.own[i];
        }
        for (let i = 0; i < n; i++) cur.own[i] += node.own[i];
      }
      for (const k of node.kids) { path.push(k); walk(k); path.pop(); }
    };
    walk(root);
    for (let i = 0; i < n; i++) inv.tot[i] = root.tot[i];
    for (const k of inv.kids) k.flags = "";
    return inv;
  }
  function sortedKids(node, m) {
    return node.kids.slice().sort((a, b) => b.tot[m] - a.tot[m]);
  }

  // ---- controls ------------------------------------------------------------------------
  function weightIndex(ms) {
    // Reports weigh by the time when there is one, else by the first non-count metric.
    let i = ms.findIndex((m) => m.name === "time");
    if (i < 0) i = ms.findIndex((m) => m.name !== "calls");
    return Math.max(0, i);
  }
  function fillSelectors() {
    const ms = metricsOf(st.doc);
    const msel = $("metric");
    const names = ms.map((m) => m.name).join(",");
    if (msel.dataset.names !== names) {
      msel.innerHTML = ms.map((m, i) => `<option value="${i}">${esc(m.name)}</option>`).join("");
      msel.dataset.names = names;
      st.metric = weightIndex(ms);
      msel.value = String(st.metric);
    }
    const tsel = $("threads");
    const threads = st.doc.threads || [];
    const tnames = threads.map((t) => t.name).join("\u0000");
    if (tsel.dataset.names !== tnames) {
      tsel.innerHTML = `<option value="merged">all, merged</option><option value="groups">all, grouped by name</option>` +
        `<option value="each">all, one tower each</option>` +
        threads.map((t, i) => `<option value="${i}">${esc(t.name)}</option>`).join("");
      tsel.dataset.names = tnames;
      if (!["merged", "groups", "each"].includes(st.threads) && Number(st.threads) >= threads.length) st.threads = "merged";
      tsel.value = st.threads;
    }
    const hasRegions = Array.isArray(st.doc.regions);
    document.querySelector('.ffapp .tab[data-view="regions"]').hidden = !hasRegions;
    if (hasRegions && !st.chosenView && st.view === "flame") setView("regions");
  }
  function setView(v) {
    st.view = v;
    for (const t of document.querySelectorAll(".ffapp .tab")) t.classList.toggle("on", t.dataset.view === v);
    for (const s of document.querySelectorAll(".ffapp .view")) s.classList.toggle("on", s.id === "ff-view-" + v);
    render();
  }

  // ---- search --------------------------------------------------------------------------
  function matches(node) {
    return st.search !== null && st.search.test(node.full);
  }
  // Share of the weight under frames that match, each counted once (outermost match).
  function matchedShare(root, m) {
    let sum = 0;
    const walk = (n) => {
      if (matches(n)) { sum += n.tot[m]; return; }
      for (const k of n.kids) walk(k);
    };
    for (const k of root.kids) walk(k);
    return sum;
  }

  // ---- flame graph (icicle: the root on top) --------------------------------------------
  function color(node) {
    let h = 0;
    const cls = node.full.split("(")[0];
    for (let i = 0; i < cls.length; i++) h = (h * 31 + cls.charCodeAt(i)) | 0;
    const hue = 10 + (Math.abs(h) % 45);
    return `hsl(${hue}, 85%, ${60 + (Math.abs(h >> 8) % 15)}%)`;
  }
  function zoomed(root) {
    const chain = [root];
    let cur = root;
    for (const key of st.zoom) {
      const next = cur.kids.find((k) => k.key === key);
      if (!next) break;
      chain.push(next);
      cur = next;
    }
    return chain;
  }
  function drawFlame() {
    const root = st.tree;
    const m = st.metric;
    const canvas = $("flame");
    const width = canvas.parentElement.clientWidth || 1000;
    const chain = zoomed(root);
    const focus = chain[chain.length - 1];
    // Frames narrower than half a pixel are not drawn (nor visited): their count is shown.
    const minFrac = 0.5 / width;
    const boxes = [];
    let hidden = 0;
    let depth = 0;
    chain.forEach((n, d) => boxes.push({ n, x: 0, w: 1, d, ancestor: d < chain.length - 1 }));
    const base = chain.length - 1;
    const all = focus.tot[m];
    const lay = (n, x, d, parent) => {
      let cx = x;
      for (const k of sortedKids(n, m)) {
        const w = all > 0 ? k.tot[m] / all : 0;
        if (w < minFrac) { if (k.tot[m] > 0) hidden++; continue; }
        const box = { n: k, x: cx, w, d, parent };
        boxes.push(box);
        depth = Math.max(depth, d);
        if (boxes.length < 200000) lay(k, cx, d + 1, box);
        cx += w;
      }
    };
    if (all > 0) lay(focus, 0, base + 1, null);
    const rows = Math.max(depth, base) + 1;
    const dpr = window.devicePixelRatio || 1;
    canvas.style.height = rows * ROW + "px";
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(rows * ROW * dpr);
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    st.rects = [];
    for (const b of boxes) {
      const x = b.x * width, w = b.w * width, y = b.d * ROW;
      const hit = matches(b.n);
      ctx.fillStyle = b.ancestor ? "#cfd8dc" : hit ? "#e040fb" : color(b.n);
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      st.rects.push({ x, y, w, b });
      if (w > 24) {
        const text = fit(ctx, b.n, w - 6);
        if (text) { ctx.fillStyle = "#111"; ctx.fillText(text, x + 3, y + ROW / 2); }
      }
    }
    $("flame-note").textContent = hidden ? `${hidden.toLocaleString("en-US")} frames narrower than half a pixel are not drawn: click a frame to zoom in` : "";
    $("crumbs").innerHTML = chain.length > 1
      ? chain.map((n, i) => `<a data-depth="${i}">${esc(i === 0 ? "⟲ " + n.name : n.name)}</a>`).join("›")
      : "";
  }
  // The longest of the frame's labels that fits: Class.method, method, a cut name.
  function fit(ctx, n, w) {
    const dot = n.name.lastIndexOf(".");
    const options = [n.name];
    if (dot > 0) options.push(n.name.slice(dot + 1));
    for (const t of options) if (ctx.measureText(t).width <= w) return t;
    const t = options[options.length - 1];
    const chars = Math.floor(w / 6.5) - 1;
    return chars >= 2 ? t.slice(0, chars) + "…" : "";
  }
  function frameAt(ev) {
    const r = $("flame").getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (let i = st.rects.length - 1; i >= 0; i--) {
      const q = st.rects[i];
      if (x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW) return q.b;
    }
    return null;
  }
  // Beside the pointer, on whichever side keeps the whole tooltip inside the window.
  function placeTip(tip, ev) {
    const pad = 8, vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = ev.clientX + 12, y = ev.clientY + 14;
    if (x + w > vw - pad) x = ev.clientX - 12 - w;
    if (y + h > vh - pad) y = ev.clientY - 14 - h;
    tip.style.left = Math.max(pad, Math.min(x, vw - pad - w)) + "px";
    tip.style.top = Math.max(pad, Math.min(y, vh - pad - h)) + "px";
  }
  function tipText(n) {
    const ms = metricsOf(st.doc);
    const root = st.tree;
    const lines = [n.full + (n.flags ? "  [" + n.flags + "]" : "")];
    ms.forEach((m, i) => {
      if (m.name === "calls") lines.push(`calls: ${fmt(n.own[i], m.unit)}`);
      else lines.push(`${m.name}: total ${fmt(n.tot[i], m.unit)} (${pct(n.tot[i], root.tot[i])}), self ${fmt(n.own[i], m.unit)}`);
    });
    return lines.join("\n");
  }

  // ---- call tree -----------------------------------------------------------------------
  function columns(ms) {
    const cols = [];
    ms.forEach((m, i) => {
      if (m.name === "calls") cols.push({ title: "calls", get: (n) => n.own[i], unit: m.unit, attr: "calls" });
      else {
        cols.push({ title: "total " + m.name, get: (n) => n.tot[i], unit: m.unit, attr: "total-" + m.name });
        cols.push({ title: "self " + m.name, get: (n) => n.own[i], unit: m.unit, attr: "self-" + m.name });
      }
    });
    return cols;
  }
  function renderTree() {
    const ms = metricsOf(st.doc);
    const m = st.metric;
    const root = st.tree;
    const cols = columns(ms);
    $("tree").tHead.innerHTML = `<tr><th>${esc(ms[m] ? ms[m].name : "")} %</th>${cols.map((c) => `<th>${esc(c.title)}</th>`).join("")}<th class="m">method</th></tr>`;
    if (!st.autoExpanded && root.kids.length) {
      // The hottest path opens by itself while one callee holds most of the weight.
      let n = root, path = "0";
      for (let d = 0; d < 12 && n.kids.length; d++) {
        const k = sortedKids(n, m)[0];
        if (n !== root && k.tot[m] < 0.5 * n.tot[m]) break;
        path += "/" + k.key;
        st.expanded.add(path);
        n = k;
      }
      st.autoExpanded = true;
    }
    const out = [];
    const row = (n, depth, path) => {
      const open = st.expanded.has(path);
      const tg = n.kids.length ? (open ? "▾" : "▸") : "";
      const share = root.tot[m] > 0 ? n.tot[m] / root.tot[m] : 0;
      out.push(`<tr data-path="${esc(path)}" data-name="${esc(n.name)}" data-full="${esc(n.full)}"` +
        cols.map((c) => ` data-${esc(c.attr)}="${c.get(n)}"`).join("") + (matches(n) ? ' class="hit"' : "") + ">" +
        `<td><span class="bar" style="width:${Math.round(share * 40)}px"></span>${pct(n.tot[m], root.tot[m])}</td>` +
        cols.map((c) => `<td>${fmt(c.get(n), c.unit)}</td>`).join("") +
        `<td class="m" style="padding-left:${8 + depth * 14}px" title="${esc(n.full)}"><span class="tg">${tg}</span>${esc(n.name)}` +
        (n.flags ? ` <em>(${esc(n.flags)})</em>` : "") + "</td></tr>");
      if (open) {
        const kids = sortedKids(n, m);
        kids.slice(0, MAX_CHILD_ROWS).forEach((k) => row(k, depth + 1, path + "/" + k.key));
        if (kids.length > MAX_CHILD_ROWS) {
          out.push(`<tr><td></td>${cols.map(() => "<td></td>").join("")}<td class="m" style="padding-left:${22 + depth * 14}px">… ${kids.length - MAX_CHILD_ROWS} more callees</td></tr>`);
        }
      }
    };
    row(root, 0, "0");
    $("tree").tBodies[0].innerHTML = out.join("");
  }

  // ---- hot spots -----------------------------------------------------------------------
  function renderHot() {
    const ms = metricsOf(st.doc);
    const m = st.metric;
    const n = ms.length;
    const by = new Map();
    const onPath = new Map();
    const walk = (node) => {
      for (const k of node.kids) {
        let h = by.get(k.full);
        if (!h) { h = { name: k.name, full: k.full, own: new Float64Array(n), tot: new Float64Array(n) }; by.set(k.full, h); }
        for (let i = 0; i < n; i++) h.own[i] += k.own[i];
        // A method's total counts its outermost frames only, so recursion is not counted twice.
        const seen = onPath.get(k.full) || 0;
        if (!seen) for (let i = 0; i < n; i++) h.tot[i] += k.tot[i];
        onPath.set(k.full, seen + 1);
        walk(k);
        onPath.set(k.full, seen);
      }
    };
    // The callers' view has no callees to add up: hot spots always come from the call tree.
    walk(st.inverted ? build(st.doc, ms, st.threads, false) : st.tree);
    const rows = [...by.values()].sort((a, b) => b.own[m] - a.own[m]);
    const all = st.tree.tot[m];
    const cols = [];
    ms.forEach((mm, i) => {
      if (mm.name === "calls") cols.push({ title: "calls", get: (h) => h.own[i], unit: mm.unit });
      else {
        cols.push({ title: "self " + mm.name, get: (h) => h.own[i], unit: mm.unit });
        cols.push({ title: "total " + mm.name, get: (h) => h.tot[i], unit: mm.unit });
      }
    });
    $("hot").tHead.innerHTML = `<tr><th>self %</th>${cols.map((c) => `<th>${esc(c.title)}</th>`).join("")}<th class="m">method</th></tr>`;
    const body = rows.slice(0, MAX_HOT_ROWS).map((h) =>
      `<tr data-full="${esc(h.full)}"${matches(h) ? ' class="hit"' : ""}><td>${pct(h.own[m], all)}</td>${cols.map((c) => `<td>${fmt(c.get(h), c.unit)}</td>`).join("")}<td class="m" title="${esc(h.full)}">${esc(h.name)}</td></tr>`);
    if (rows.length > MAX_HOT_ROWS) body.push(`<tr><td colspan="${cols.length + 2}" class="m">… ${rows.length - MAX_HOT_ROWS} more methods</td></tr>`);
    $("hot").tBodies[0].innerHTML = body.join("");
  }

  // ---- regions -------------------------------------------------------------------------
  function renderRegions() {
    const regions = st.doc.regions || [];
    const ns = (v) => fmt(v || 0, "nanoseconds");
    $("regions").tHead.innerHTML = "<tr><th>count</th><th>threads</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>min</th><th>max</th><th>total</th><th class=\"m\">region</th></tr>";
    $("regions").tBodies[0].innerHTML = regions.map((r) => {
      const p = r.percentiles || {};
      const full = r.class + "." + r.method + r.descriptor;
      const mark = r.uncertain ? "~" : "";
      return `<tr data-full="${esc(full)}" data-count="${r.count}"><td>${fmt(r.count, "count")}</td><td>${r.threads}</td>` +
        `<td>${mark}${ns(r.count ? r.total_ns / r.count : 0)}</td><td>${mark}${ns(p.p50_ns)}</td><td>${mark}${ns(p.p90_ns)}</td>` +
        `<td>${mark}${ns(p.p99_ns)}</td><td>${mark}${ns(p["p99.9_ns"])}</td><td>${mark}${ns(r.min_ns)}</td><td>${mark}${ns(r.max_ns)}</td>` +
        `<td>${mark}${ns(r.total_ns)}</td><td class="m" title="${esc(full)}">${esc(simpleClass(r.class) + "." + r.method)}</td></tr>`;
    }).join("");
  }

  // ---- status --------------------------------------------------------------------------
  function renderStatus() {
    const s = st.status;
    const facts = [];
    if (s && s.about && s.about.pid) facts.push("JVM " + s.about.pid);
    const doc = st.doc;
    if (doc) {
      facts.push("mode " + doc.mode);
      const meth = doc.methods || {};
      facts.push(`${fmt(meth.instrumented || 0, "count")} methods instrumented, ${fmt(meth.called || 0, "count")} called`);
      facts.push(`${(doc.threads || []).length} threads`);
    }
    if (s && s.agent) {
      facts.push(`${fmt(s.agent.instrumented_classes, "count")} classes`);
      facts.push(`dropped events: ${fmt(s.agent.dropped_events, "count")}`);
    }
    $("facts").textContent = facts.join(" · ");
    $("facts").dataset.dropped = s && s.agent ? s.agent.dropped_events : "";
    const state = st.gone ? "gone" : s ? s.state : "loading";
    const label = { profiling: "profiling", saved: "saved profile", ended: "ended", gone: "ferrofluid has exited", loading: "loading…" }[state] || state;
    $("state").textContent = label;
    $("state").dataset.state = state;
    const live = state === "profiling";
    for (const id of ["reset", "stop", "detach"]) $(id).disabled = !live;
    if (s && s.ended) say(st.final || s.ended);
  }
  function say(text) {
    $("message").hidden = !text;
    $("message").textContent = text || "";
  }

  // ---- rendering -----------------------------------------------------------------------
  function render() {
    if (!st.doc) return;
    fillSelectors();
    const ms = metricsOf(st.doc);
    if (!ms.length && st.view !== "regions") { st.tree = null; return; }
    st.tree = build(st.doc, ms, st.threads, st.inverted);
    const m = st.metric;
    $("matched").textContent = st.search ? "matched: " + pct(matchedShare(st.tree, m), st.tree.tot[m]) : "";
    $("matched").dataset.share = st.search ? String(st.tree.tot[m] > 0 ? matchedShare(st.tree, m) / st.tree.tot[m] : 0) : "";
    if (st.view === "flame") drawFlame();
    else if (st.view === "tree") renderTree();
    else if (st.view === "hot") renderHot();
    else if (st.view === "regions") renderRegions();
  }

  // ---- talking to the server -----------------------------------------------------------
  async function api(path, method) {
    const r = await fetch(path + "?token=" + encodeURIComponent(TOKEN), { method: method || "GET", cache: "no-store" });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error || r.status + " " + r.statusText);
    return body;
  }
  async function refresh() {
    try {
      const [status, doc] = await Promise.all([api("/api/status"), st.ended ? Promise.resolve(st.doc) : api("/api/profile")]);
      st.status = status;
      st.doc = doc;
      if (status.state !== "profiling") st.ended = true;
      renderStatus();
      render();
      document.body.dataset.refreshed = String((Number(document.body.dataset.refreshed) || 0) + 1);
    } catch (e) {
      if (e instanceof TypeError) { st.gone = true; st.ended = true; renderStatus(); }
      // Once Stop or Detach answered, their message stays: requests in flight then fail.
      else say(st.final || String(e.message || e));
    }
  }
  function loop() {
    const again = () => { if (!st.ended) setTimeout(loop, REFRESH_MS); };
    if ($("pause").checked) { again(); return; }
    refresh().then(again, again);
  }
  async function control(what, busy) {
    say(busy);
    try {
      const r = await api("/api/" + what, "POST");
      if (what !== "reset") st.final = r.message || "";
      say(r.message || "");
      if (what === "reset") { st.autoExpanded = false; await refresh(); }
      else { st.ended = true; await refresh(); }
    } catch (e) { say(String(e.message || e)); }
  }

  // ---- events --------------------------------------------------------------------------
  for (const t of document.querySelectorAll(".ffapp .tab")) t.addEventListener("click", () => { st.chosenView = true; setView(t.dataset.view); });
  $("metric").addEventListener("change", (e) => { st.metric = Number(e.target.value); render(); });
  $("threads").addEventListener("change", (e) => { st.threads = e.target.value; st.zoom = []; render(); });
  $("inverted").addEventListener("change", (e) => { st.inverted = e.target.checked; st.zoom = []; render(); });
  $("search").addEventListener("input", (e) => {
    const v = e.target.value;
    try { st.search = v ? new RegExp(v, "i") : null; } catch (_) { st.search = null; }
    render();
  });
  $("reset").addEventListener("click", () => control("reset", "resetting…"));
  $("stop").addEventListener("click", () => control("stop", "stopping and writing the report…"));
  $("detach").addEventListener("click", () => control("detach", "detaching…"));
  $("flame").addEventListener("click", (ev) => {
    const b = frameAt(ev);
    if (!b) return;
    const chain = zoomed(st.tree);
    if (b.ancestor) st.zoom = st.zoom.slice(0, b.d);
    else {
      // The path from the root to the clicked frame, through the frames drawn above it.
      const path = [];
      for (let o = b; o; o = o.parent) path.unshift(o.n.key);
      st.zoom = st.zoom.slice(0, chain.length - 1).concat(path);
    }
    render();
  });
  $("crumbs").addEventListener("click", (ev) => {
    const d = ev.target.dataset.depth;
    if (d === undefined) return;
    st.zoom = st.zoom.slice(0, Number(d));
    render();
  });
  $("flame").addEventListener("mousemove", (ev) => {
    const b = frameAt(ev);
    const tip = $("tip");
    if (!b) { tip.hidden = true; return; }
    tip.textContent = tipText(b.n);
    tip.hidden = false;
    placeTip(tip, ev);
  });
  $("flame").addEventListener("mouseleave", () => { $("tip").hidden = true; });
  $("tree").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-path]");
    if (!tr) return;
    const p = tr.dataset.path;
    if (st.expanded.has(p)) st.expanded.delete(p); else st.expanded.add(p);
    renderTree();
  });
  window.addEventListener("resize", () => { if (st.view === "flame") render(); });

  if (EMBEDDED) {
    for (const id of ["reset", "stop", "detach", "pause"]) $(id).closest("label, button").hidden = true;
    st.doc = EMBEDDED;
    st.status = { state: "saved" };
    st.ended = true;
    setView("flame");
    renderStatus();
  } else {
    setView("flame");
    loop();
  }
})();
