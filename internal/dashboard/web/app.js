// Leasehold dashboard page. The server aggregates; this script only draws.
// One EventSource carries everything: "hello" (the stream id), "summary"
// (counts, histogram, leaders, attention, the server's clock), "heat" (the
// heat map whole: per node lease a renewal code and a duration, base64),
// "heatdelta" (only the cells that changed since the previous tick) and
// "rows" (the page of the table in view). Filters and paging are posted to
// /view; the answer arrives on the same stream. The page computes each
// cell's age from its renewal code and the summary's clock
// (internal/dashboard/heatmap.go defines the encoding).
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const PAGE = 50;
  const LATE = 38; // HeatByte at LateFraction (1 + 37.5)
  // Cell codes (heatmap.go): 0 never renewed, 65535 old, else 1 + the
  // renewal time in 100 ms units modulo 65534.
  const NEVER = 0, OLD = 65535, MOD = 65534, UNIT_MS = 100;

  // Colour of each heat byte, as 0xAABBGGRR for a little-endian Uint32Array.
  const rgb = (h) => [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
  const mix = (a, b, t) => a.map((v, i) => Math.round(v + (b[i] - v) * t));
  const C = { healthy: rgb("#1a9850"), fresh: rgb("#66bd63"), late: rgb("#fee08b"), lateEnd: rgb("#fc8d59"),
    expired: rgb("#d73027"), old: rgb("#7f0000"), unknown: rgb("#555b61") };
  const palette = new Uint32Array(256);
  const paletteRGB = [];
  for (let b = 0; b < 256; b++) {
    let c;
    if (b === 0) c = C.unknown;
    else if (b < LATE) c = mix(C.healthy, C.fresh, (b - 1) / (LATE - 1));
    else if (b < 101) c = mix(C.late, C.lateEnd, (b - LATE) / (101 - LATE));
    else if (b < 201) c = mix(C.expired, C.old, (b - 101) / 100);
    else c = C.old;
    paletteRGB[b] = c;
    palette[b] = (255 << 24) | (c[2] << 16) | (c[1] << 8) | c[0];
  }

  const st = { id: null, offset: 0, clockOffset: 0, codes: new Uint16Array(0), durs: new Uint16Array(0),
    drawNow: 0, rows: [], total: 0, layout: null, firstPaint: false, summaries: 0, lastSummaryAt: 0 };
  const serverNow = () => Date.now() + st.clockOffset;

  // ---- stream ----
  function connect() {
    const es = new EventSource("events");
    es.addEventListener("hello", (e) => { st.id = JSON.parse(e.data).id; $("conn").textContent = "live"; $("conn").className = "conn live"; postView(); });
    es.addEventListener("summary", (e) => summary(JSON.parse(e.data)));
    es.addEventListener("heat", (e) => heat(e.data));
    es.addEventListener("heatdelta", (e) => heatDelta(e.data));
    es.addEventListener("rows", (e) => rows(JSON.parse(e.data)));
    es.onerror = () => { $("conn").textContent = "reconnecting…"; $("conn").className = "conn down"; };
  }

  let viewTimer = 0;
  function postView() {
    clearTimeout(viewTimer);
    viewTimer = setTimeout(() => {
      if (!st.id) return;
      const v = { q: $("search").value.trim(), ns: $("namespace").value.trim(), label: $("label").value.trim(),
        state: $("state").value, offset: st.offset, limit: PAGE };
      fetch("view?id=" + st.id, { method: "POST", body: JSON.stringify(v) });
    }, 80);
  }

  // ---- summary ----
  function summary(s) {
    st.clockOffset = s.now - Date.now();
    st.summaries++;
    st.lastSummaryAt = performance.now();
    st.lastSummary = s;
    st.drawNow = s.now;
    const c = s.counts;
    $("count-healthy").textContent = c.healthy;
    $("count-late").textContent = c.late;
    $("count-expired").textContent = c.expired;
    $("count-notready").textContent = c.notReady;
    $("count-unknown").textContent = c.unknown;
    $("totals").textContent = `${s.nodeLeases} node leases · ${s.nodes} nodes · ${s.leases} leases in all`;
    $("clock").textContent = new Date(s.now).toISOString().replace("T", " ").slice(0, 19) + " UTC";
    access(s.access);
    histogram(s.histogram);
    attention(s.attention);
    leaders(s.leaders);
    requestDraw(); // ages grow with the clock: every tick recolours the map
  }

  function access(a) {
    const el = $("access");
    el.replaceChildren();
    for (const [res, v] of Object.entries(a || {}).sort()) {
      if (v === "ok") continue;
      const d = document.createElement("div");
      d.className = v.startsWith("forbidden") ? "forbidden" : "";
      d.dataset.resource = res;
      d.textContent = `${res}: ${v}`;
      el.append(d);
    }
  }

  function histogram(h) {
    const el = $("hist");
    if (el.children.length !== h.length) {
      el.replaceChildren();
      h.forEach((_, i) => {
        const bar = document.createElement("div");
        bar.className = "bar";
        const c = paletteRGB[Math.min(250, 1 + i * 10)];
        bar.style.background = `rgb(${c[0]},${c[1]},${c[2]})`;
        if (i % 5 === 0) { const l = document.createElement("span"); l.textContent = i === 20 ? "2×+" : (i / 10) + "×"; bar.append(l); }
        el.append(bar);
      });
    }
    const top = Math.max(1, ...h);
    h.forEach((n, i) => { el.children[i].style.height = (100 * n / top) + "%"; el.children[i].title = `${n} leases aged ${(i / 10)}–${((i + 1) / 10)}× their duration`; });
  }

  function list(title, items, total, id) {
    const d = document.createElement("div");
    d.id = id;
    const h = document.createElement("b");
    h.textContent = `${title} (${total})`;
    const ul = document.createElement("ul");
    for (const it of items || []) {
      const li = document.createElement("li");
      li.textContent = `${it.namespace ? it.namespace + "/" : ""}${it.name}: ${it.detail}`;
      ul.append(li);
    }
    if (total > (items || []).length) { const li = document.createElement("li"); li.textContent = `… and ${total - items.length} more`; ul.append(li); }
    d.append(h, ul);
    return d;
  }

  function attention(a) {
    $("attention").replaceChildren(
      list("Flapping nodes (Ready changed 3+ times in 10 min)", a.flapping, a.flappingTotal, "att-flapping"),
      list("Late renewals (over 1.5 renew intervals, last 10 min)", a.late, a.lateTotal, "att-late"),
      list("Skewed clocks (renewTime over 5 s from when seen)", a.skewed, a.skewedTotal, "att-skewed"),
      list("API server identity leases awaiting collection", a.identity, a.identityTotal, "att-identity"));
  }

  const dur = (ms) => {
    const s = Math.round(Math.abs(ms) / 1000);
    const t = s < 120 ? s + "s" : s < 7200 ? Math.floor(s / 60) + "m" + (s % 60) + "s" : Math.floor(s / 3600) + "h" + Math.floor(s % 3600 / 60) + "m";
    return ms < 0 ? "-" + t : t;
  };
  const time = (ms) => ms ? new Date(ms).toISOString().slice(11, 23) : "—";

  function leaders(ls) {
    const el = $("leaders");
    el.replaceChildren();
    if (!ls.length) { el.textContent = "No leader-election leases."; return; }
    for (const l of ls) {
      const d = document.createElement("div");
      d.className = "leader";
      d.dataset.lease = l.namespace + "/" + l.name;
      const head = document.createElement("div");
      head.className = "head";
      const b = document.createElement("b");
      b.textContent = `${l.namespace}/${l.name}`;
      const info = document.createElement("span");
      info.className = "holder";
      info.textContent = l.state === "deleted" ? "  lease deleted" :
        `  holder ${l.holder || "(none)"} · leading for ${l.since ? dur(serverNow() - l.since) : "?"} · token ${l.transitions} · ${l.state}`;
      head.append(b, info);
      const ol = document.createElement("ol");
      ol.className = "timeline";
      for (const t of l.timeline.slice().reverse()) {
        const li = document.createElement("li");
        const tok = document.createElement("span");
        tok.className = "token";
        tok.textContent = t.token >= 0 ? `token ${t.token}` : "token ?";
        li.append(`${time(Date.parse(t.at))}  ${t.from || "—"} → ${t.to || "—"}  `, tok, `  ${t.kind}${t.event ? " (event)" : ""}`);
        li.dataset.kind = t.kind;
        li.dataset.token = t.token;
        li.dataset.to = t.to || "";
        ol.append(li);
      }
      d.append(head, ol);
      el.append(d);
    }
  }

  // ---- heat map ----
  function bytes(b64) {
    const bin = atob(b64);
    const a = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
    return new DataView(a.buffer);
  }

  // heat: uint32 n, n codes, n durations (uint16, little-endian).
  function heat(b64) {
    const v = bytes(b64);
    const n = v.getUint32(0, true);
    st.codes = new Uint16Array(n);
    st.durs = new Uint16Array(n);
    for (let i = 0; i < n; i++) { st.codes[i] = v.getUint16(4 + 2 * i, true); st.durs[i] = v.getUint16(4 + 2 * n + 2 * i, true); }
    requestDraw();
  }

  // heatdelta: entries of (uvarint gap to the previous index, code, duration).
  function heatDelta(b64) {
    const v = bytes(b64);
    let p = 0, i = -1;
    while (p < v.byteLength) {
      let gap = 0, shift = 0, b;
      do { b = v.getUint8(p++); gap += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
      i += gap;
      st.codes[i] = v.getUint16(p, true);
      st.durs[i] = v.getUint16(p + 2, true);
      p += 4;
    }
    window.dash.deltas++;
    requestDraw();
  }

  // heatByte is HeatByte (classify.go) of cell i at nowU, the server's clock
  // in code units: 0 never renewed, else 1 + the age in hundredths of the
  // duration, at most 250.
  function heatByte(i, nowU) {
    const c = st.codes[i], d = st.durs[i];
    if (c === NEVER || d === 0) return 0;
    if (c === OLD) return 250;
    const age = (nowU - (c - 1) + MOD) % MOD;
    return Math.min(250, 1 + Math.floor(age * 10 / d));
  }
  const nowUnits = (ms) => Math.floor(ms / UNIT_MS) % MOD;

  let drawPending = false;
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => {
      drawPending = false;
      const t0 = performance.now();
      draw();
      const ms = performance.now() - t0;
      window.dash.drawMs += ms;
      window.dash.drawMaxMs = Math.max(window.dash.drawMaxMs, ms);
    });
  }

  const off = document.createElement("canvas");
  // Reused from draw to draw: at 100,000 cells they are 100 KB and 400 KB.
  let heatN = new Uint8Array(0), img = null;
  function draw() {
    const cv = $("heat");
    const dpr = window.devicePixelRatio || 1;
    const W = Math.round(cv.clientWidth * dpr), H = Math.round(cv.clientHeight * dpr);
    if (cv.width !== W || cv.height !== H) { cv.width = W; cv.height = H; }
    const n = st.codes.length;
    const nowU = nowUnits(st.drawNow);
    const ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, W, H);
    if (!n) { st.layout = null; markPainted(); return; }
    // Columns so that square cells fill the canvas; cells at most 24 px.
    let cols = Math.max(1, Math.ceil(Math.sqrt(n * W / H)));
    let rowsN = Math.ceil(n / cols);
    const cell = Math.min(24 * dpr, W / cols, H / rowsN);
    if (cell === 24 * dpr) { cols = Math.min(n, Math.floor(W / cell)); rowsN = Math.ceil(n / cols); }
    if (off.width !== cols || off.height !== rowsN) { off.width = cols; off.height = rowsN; }
    const octx = off.getContext("2d");
    if (!img || img.width !== cols || img.height !== rowsN) img = octx.createImageData(cols, rowsN);
    const px = new Uint32Array(img.data.buffer);
    if (heatN.length !== n) heatN = new Uint8Array(n);
    for (let i = 0; i < n; i++) { heatN[i] = heatByte(i, nowU); px[i] = palette[heatN[i]]; }
    px.fill(0, n); // a reused image may hold cells of a larger fleet
    octx.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    const gap = cell >= 6 ? 1 : 0;
    if (gap) {
      for (let i = 0; i < n; i++) {
        const c = paletteRGB[heatN[i]];
        ctx.fillStyle = `rgb(${c[0]},${c[1]},${c[2]})`;
        ctx.fillRect((i % cols) * cell, Math.floor(i / cols) * cell, cell - gap, cell - gap);
      }
    } else {
      ctx.drawImage(off, 0, 0, cols * cell, rowsN * cell);
    }
    st.layout = { cols, cell, dpr };
    markPainted();
  }

  function markPainted() {
    if (!st.firstPaint && st.summaries > 0) { st.firstPaint = true; window.dash.interactiveAt = performance.now(); }
    window.dash.paints++;
  }

  function cellAt(ev) {
    const l = st.layout;
    if (!l) return -1;
    const r = $("heat").getBoundingClientRect();
    const x = Math.floor((ev.clientX - r.left) * l.dpr / l.cell), y = Math.floor((ev.clientY - r.top) * l.dpr / l.cell);
    const i = y * l.cols + x;
    return x < l.cols && i < st.codes.length ? i : -1;
  }

  let tipFor = -1;
  async function hover(ev) {
    const i = cellAt(ev);
    const tip = $("tip");
    if (i < 0) { tip.hidden = true; tipFor = -1; return; }
    tip.style.left = (ev.offsetX + 12) + "px";
    tip.style.top = (ev.offsetY + 12) + "px";
    if (i === tipFor) return;
    tipFor = i;
    const name = await (await fetch("cell?i=" + i)).text();
    if (tipFor !== i) return;
    const b = heatByte(i, nowUnits(serverNow()));
    tip.textContent = `${name}: ${b ? "age " + ((b - 1) / 100).toFixed(2) + "× duration" : "never renewed"}`;
    tip.hidden = false;
  }

  async function clickCell(ev) {
    const i = cellAt(ev);
    if (i < 0) return;
    const name = await (await fetch("cell?i=" + i)).text();
    $("search").value = name;
    $("namespace").value = "kube-node-lease";
    st.offset = 0;
    postView();
    $("leases").scrollIntoView();
  }

  // ---- rows ----
  function rows(r) {
    if (!window.dash.rowsAt) window.dash.rowsAt = performance.now();
    st.rows = r.rows;
    st.total = r.total;
    $("rows-total").textContent = `${r.total} matching`;
    $("page").textContent = r.total ? `${r.offset + 1}–${r.offset + r.rows.length} of ${r.total}` : "0";
    const err = $("rows-error");
    err.hidden = !r.error;
    err.textContent = r.error || "";
    const tb = $("rows").tBodies[0];
    const trs = r.rows.map((x) => {
      const tr = document.createElement("tr");
      tr.dataset.name = x.name;
      tr.dataset.namespace = x.namespace;
      const td = (text, cls) => { const c = document.createElement("td"); c.textContent = text; if (cls) c.className = cls; tr.append(c); return c; };
      td(x.namespace); td(x.name); td(x.holder || "—"); td(time(x.renew));
      const exp = td("", "expires");
      exp.dataset.deadline = x.renew && x.duration ? x.renew + x.duration * 1000 : "";
      td(x.transitions); td(x.state, "state state-" + x.state);
      td(x.owner ? x.owner + (x.orphaned ? " (orphaned: owner gone)" : "") : "—", x.orphaned ? "orphaned" : "");
      td(x.ready === undefined ? "" : x.ready === "True" ? "Ready" : x.ready === "missing" ? "no Node" : "NotReady (" + x.ready + ")",
        x.ready && x.ready !== "True" ? "notready" : "");
      td((x.taints || []).join(", "));
      return tr;
    });
    tb.replaceChildren(...trs);
    countdown();
  }

  function countdown() {
    const now = serverNow();
    for (const c of document.querySelectorAll("#rows td.expires")) {
      c.textContent = c.dataset.deadline ? dur(Number(c.dataset.deadline) - now) : "—";
    }
  }

  // ---- wiring ----
  window.dash = { paints: 0, drawMs: 0, drawMaxMs: 0, deltas: 0, interactiveAt: 0, rowsAt: 0, palette: paletteRGB, state: st,
    // pixel returns the [r,g,b] drawn at the centre of heat-map cell i.
    pixel(i) {
      const l = st.layout;
      if (!l) return null;
      const x = Math.floor((i % l.cols) * l.cell + l.cell / 2), y = Math.floor(Math.floor(i / l.cols) * l.cell + l.cell / 2);
      const d = $("heat").getContext("2d").getImageData(x, y, 1, 1).data;
      return [d[0], d[1], d[2]];
    } };
  for (const id of ["search", "namespace", "label"]) $(id).addEventListener("input", () => { st.offset = 0; postView(); });
  $("state").addEventListener("change", () => { st.offset = 0; postView(); });
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  $("prev").addEventListener("click", () => { st.offset = Math.max(0, st.offset - PAGE); postView(); });
  $("next").addEventListener("click", () => { if (st.offset + PAGE < st.total) { st.offset += PAGE; postView(); } });
  $("heat").addEventListener("mousemove", hover);
  $("heat").addEventListener("mouseleave", () => { $("tip").hidden = true; tipFor = -1; });
  $("heat").addEventListener("click", clickCell);
  window.addEventListener("resize", requestDraw);
  setInterval(countdown, 250);
  connect();
})();
