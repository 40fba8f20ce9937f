// FlagTree Profiler HTML report: an icicle view of the calling-context tree drawn on one canvas.
// Names reach the page only through textContent and fillText, never as markup.
(function () {
  "use strict";
  var ROW = 18, MIN_W = 0.5, TEXT_W = 36, MAX_ROWS = 1700;  // 1700 rows keep the canvas < 32k px
  var PERFETTO = "https://ui.perfetto.dev";  // opened only by the user, on a trace they pick
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var N = D.parent.length, S = D.strings, diff = D.diffSource != null;
  var $ = function (id) { return document.getElementById(id); };
  var canvas = $("flame"), ctx = canvas.getContext("2d");
  var state = { metric: 0, base: "a", zoom: 0, matches: null, query: "" };
  var report = window.__report = { nodeCount: N, drawnNodes: 0, drawMs: 0, readyMs: 0, matches: 0, data: D };

  // Children in CSR form (offsets + flat list); nodes come parents first.
  var childStart = new Int32Array(N + 1), childList = new Int32Array(Math.max(N - 1, 0));
  (function () {
    var counts = new Int32Array(N), i;
    for (i = 1; i < N; i++) counts[D.parent[i]]++;
    for (i = 0; i < N; i++) childStart[i + 1] = childStart[i] + counts[i];
    var fill = childStart.slice(0, N);
    for (i = 1; i < N; i++) childList[fill[D.parent[i]]++] = i;
  })();
  var depthOf = new Int32Array(N);
  for (var i = 1; i < N; i++) depthOf[i] = depthOf[D.parent[i]] + 1;

  // Rates (FLOP/s, bytes/s) travel as their parts and are divided here: the file stays small.
  var byId = {};
  D.metrics.forEach(function (m) { byId[m.id] = m; });
  D.metrics.forEach(function (m) {
    if (m.derive) { m.a = derive(m.derive, "a"); m.b = diff ? derive(m.derive, "b") : null; }
  });
  function derive(rule, side) {
    var den = byId[rule.den][side], nums = rule.num.map(function (id) { return byId[id][side]; }), out = new Array(N);
    for (var i = 0; i < N; i++) {
      var t = den[i], sum = null;
      if (t) for (var k = 0; k < nums.length; k++) if (nums[k][i] != null) sum = (sum || 0) + nums[k][i];
      out[i] = sum == null ? null : sum / (t * 1e-9);
    }
    return out;
  }

  var meta = {};
  D.meta.index.forEach(function (node, k) {
    var row = D.meta.rows[D.meta.ref[k]], entry = {};
    D.meta.keys.forEach(function (key, j) { if (row[j] != null) entry[key] = row[j]; });
    meta[node] = entry;
  });

  // Widths need an additive metric; rates (FLOP/s, util) are shown as colour over time widths.
  function widthMetric() {
    var m = D.metrics[state.metric];
    if (m.additive) return m;
    for (var k = 0; k < D.metrics.length; k++) if (D.metrics[k].additive) return D.metrics[k];
    return m;
  }
  var widthCache = {};
  function widths() {
    var m = widthMetric(), key = m.id + "/" + state.base, hit = widthCache[key];
    if (!hit) {
      var col = m[state.base] || m.a, w = new Float64Array(N);
      for (var i = 0; i < N; i++) w[i] = col[i] > 0 ? col[i] : 0;
      childList = childList.slice();  // each width order keeps its own sorted child list
      sortChildren(w);
      hit = widthCache[key] = { w: w, list: childList };
    }
    childList = hit.list;
    return hit.w;
  }
  function sortChildren(w) {  // widest first, like the terminal tree
    for (var i = 0; i < N; i++) {
      var a = childStart[i], b = childStart[i + 1];
      if (b - a > 1) {
        var part = Array.prototype.slice.call(childList, a, b);
        part.sort(function (x, y) { return w[y] - w[x] || x - y; });
        childList.set(part, a);
      }
    }
  }

  // ---- number formatting ----
  // Plain decimals, as the terminal viewer (numbers.py): four significant digits under 0.1,
  // e-notation only from 1e15 on.
  function fmtNum(v, digits) {
    var a = Math.abs(v);
    if (a >= 1e15 || !isFinite(v)) return a >= 1e15 && isFinite(v) ? v.toExponential(digits) : String(v);
    return v !== 0 && a < 0.1 ? v.toFixed(Math.min(20, digits - Math.floor(Math.log10(a)))) : v.toFixed(digits);
  }
  function scaled(v, units, base) {
    var k = 0, a = Math.abs(v);
    while (k < units.length - 1 && a >= base) { a /= base; v /= base; k++; }
    return (Number.isInteger(v) ? String(v) : v.toFixed(3)) + " " + units[k];
  }
  function fmt(v, unit) {
    if (v == null) return "-";
    if (unit === "ns") return scaled(v, ["ns", "us", "ms", "s"], 1000);
    if (unit === "FLOP/s") return scaled(v, ["FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"], 1000);
    if (unit === "B/s") return scaled(v, ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"], 1000);
    if (unit === "B") return scaled(v, ["B", "kB", "MB", "GB", "TB"], 1000);
    if (unit === "ratio") return (100 * v).toFixed(2) + " %";
    return Number.isInteger(v) ? v.toLocaleString("en-US") : fmtNum(v, 3);
  }
  function exclusive(m, col, node) {
    if (!m.additive || col[node] == null) return null;
    var v = col[node];
    for (var k = childStart[node]; k < childStart[node + 1]; k++) v -= col[childList[k]] || 0;
    return v;
  }

  // ---- colours ----
  function hashHue(s) { var h = 0; for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }
  var hueCache = [];
  function nameColour(node) {
    var n = D.name[node], c = hueCache[n];
    if (c) return c;
    var h = hashHue(S[n]);
    c = D.kernel[node] ? "hsl(" + (h % 45) + ",78%," + (58 + h % 10) + "%)" : "hsl(" + (195 + h % 40) + ",35%," + (68 + h % 10) + "%)";
    return (hueCache[n] = c);
  }
  function rampColour(f) { return "hsl(" + Math.round(55 - 55 * f) + ",85%," + Math.round(80 - 35 * f) + "%)"; }
  function diffColour(m, node) {
    var a = m.a[node], b = m.b[node];
    if (a == null && b == null) return "#e0e0e0";
    var rel = a == null ? -1 : b == null || b === 0 ? (a === 0 ? 0 : 1) : Math.max(-1, Math.min(1, (a - b) / Math.abs(b)));
    var light = Math.round(94 - 44 * Math.abs(rel));
    return rel >= 0 ? "hsl(0,80%," + light + "%)" : "hsl(215,80%," + light + "%)";
  }
  function colourer() {
    var m = D.metrics[state.metric];
    if (diff) return function (node) { return diffColour(m, node); };
    if (!m.additive) {
      var top = 0, col = m.a;
      for (var i = 0; i < N; i++) if (col[i] > top) top = col[i];
      return function (node) { return col[node] == null ? "#e0e0e0" : rampColour(top ? col[node] / top : 0); };
    }
    return nameColour;
  }

  // ---- layout and drawing ----
  var rects = { x: new Float64Array(N), w: new Float64Array(N), node: new Int32Array(N), rows: [], narrow: [] };
  function layout(w, width) {
    var root = state.zoom, scale = w[root] > 0 ? width / w[root] : 0, count = 0, rows = [], narrow = [];
    var stackN = new Int32Array(N), stackX = new Float64Array(N), top = 0, base = depthOf[root];
    stackN[0] = root; stackX[0] = 0; top = 1;
    while (top > 0) {
      top--;
      var node = stackN[top], x = stackX[top], nw = w[node] * scale, d = depthOf[node] - base;
      if (nw < MIN_W || d >= MAX_ROWS) continue;
      rects.x[count] = x; rects.w[count] = nw; rects.node[count] = node;
      (rows[d] || (rows[d] = [])).push(count);
      count++;
      // Push right to left so preorder runs left to right: every row comes out sorted by x.
      var end = childStart[node + 1], cx = x, k;
      for (k = childStart[node]; k < end; k++) cx += w[childList[k]] * scale;
      var hidden = 0, hiddenW = 0;
      for (k = end - 1; k >= childStart[node]; k--) {
        var c = childList[k], cw = w[c] * scale;
        cx -= cw;
        if (cw >= MIN_W) { stackN[top] = c; stackX[top] = cx; top++; }
        else if (w[c] > 0) { hidden++; hiddenW += cw; }
      }
      if (hidden > 0 && d + 1 < MAX_ROWS) narrow.push({ node: node, hidden: hidden, share: nw > 0 ? hiddenW / nw : 0 });
    }
    rects.rows = rows;
    rects.narrow = narrow.sort(function (a, b) { return b.hidden - a.hidden || b.share - a.share; });
    return count;
  }
  function draw() {
    var t0 = performance.now(), dpr = window.devicePixelRatio || 1;
    var width = Math.max(canvas.parentNode.clientWidth - 30, 200), w = widths();
    var count = layout(w, width), rowsUsed = Math.max(rects.rows.length, 1);
    canvas.style.height = rowsUsed * ROW + "px";
    canvas.width = Math.round(width * dpr); canvas.height = Math.round(rowsUsed * ROW * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = "11px ui-monospace, Menlo, Consolas, monospace"; ctx.textBaseline = "middle";
    var charW = ctx.measureText("abcdefghij").width / 10, colour = colourer(), matches = state.matches;
    for (var r = 0; r < count; r++) {
      var node = rects.node[r], x = rects.x[r], rw = rects.w[r], y = (depthOf[node] - depthOf[state.zoom]) * ROW;
      ctx.globalAlpha = matches && !matches[node] ? 0.35 : 1;
      ctx.fillStyle = matches && matches[node] ? "#d500f9" : colour(node);
      ctx.fillRect(x, y, Math.max(rw - 0.5, 0.5), ROW - 1);
      if (rw >= TEXT_W) {
        var label = S[D.name[node]], fit = Math.floor((rw - 6) / charW);
        if (label.length > fit) label = label.slice(0, Math.max(fit - 1, 1)) + "\u2026";
        ctx.fillStyle = "#111"; ctx.fillText(label, x + 3, y + ROW / 2);
      }
    }
    ctx.globalAlpha = 1;
    report.drawnNodes = count; report.drawMs = performance.now() - t0;
    document.body.dataset.drawnNodes = String(count);
    $("status").textContent = "drew " + count.toLocaleString("en-US") + " of " + N.toLocaleString("en-US") +
      " nodes in " + report.drawMs.toFixed(1) + " ms" + (rects.rows.length >= MAX_ROWS ? " (first " + MAX_ROWS + " levels)" : "");
    drawCrumbs(); drawLegend(); drawNarrow(w);
  }

  // ---- children too narrow to draw: said, and listed on request ----
  function drawNarrow(w) {
    var box = $("narrow"), shown = rects.narrow.slice(0, 3);
    box.textContent = "";
    box.hidden = shown.length === 0;
    report.narrow = shown.map(function (n) { return { node: n.node, hidden: n.hidden }; });
    shown.forEach(function (n) {
      var div = document.createElement("div"), button = document.createElement("button");
      div.textContent = n.hidden.toLocaleString("en-US") + " children under " + S[D.name[n.node]] +
        ", too narrow at this zoom (" + (100 * n.share).toFixed(1) + "% of its width): see the table, or";
      button.type = "button"; button.textContent = "list them";
      button.addEventListener("click", function () { listChildren(n.node, w); });
      div.appendChild(button); box.appendChild(div);
    });
  }
  var LIST_MAX = 500;
  function listChildren(node, w) {
    var list = $("narrow-list"), m = widthMetric(), kids = [];
    for (var k = childStart[node]; k < childStart[node + 1]; k++) kids.push(childList[k]);
    kids.sort(function (a, b) { return w[b] - w[a] || a - b; });
    list.textContent = "";
    kids.slice(0, LIST_MAX).forEach(function (c) {
      var li = document.createElement("li");
      li.textContent = S[D.name[c]] + "  " + fmt((m[state.base] || m.a)[c], m.unit);
      li.addEventListener("click", function () { zoomTo(c); });
      list.appendChild(li);
    });
    if (kids.length > LIST_MAX) {
      var more = document.createElement("li");
      more.textContent = "... " + (kids.length - LIST_MAX).toLocaleString("en-US") + " more: see the table below";
      list.appendChild(more);
    }
    list.hidden = false;
    report.listed = Math.min(kids.length, LIST_MAX);
  }

  // ---- breadcrumbs, legend, search ----
  function drawCrumbs() {
    var box = $("crumbs"), chain = [], n = state.zoom;
    while (n >= 0) { chain.unshift(n); n = D.parent[n]; }
    box.textContent = "";
    chain.forEach(function (node, k) {
      if (k) { var sep = document.createElement("span"); sep.className = "sep"; sep.textContent = ">"; box.appendChild(sep); }
      var a = document.createElement("a"); a.textContent = S[D.name[node]];
      a.addEventListener("click", function () { zoomTo(node); });
      box.appendChild(a);
    });
  }
  function drawLegend() {
    var m = D.metrics[state.metric], wm = widthMetric(), text = "width: inclusive " + wm.label;
    if (diff) text += " (" + (state.base === "a" ? "this" : "other") + " profile); colour: change vs " + D.diffSource + " (red = grew, blue = shrank)";
    else if (!m.additive) text += "; colour: " + m.label + " (yellow low, red high)";
    else text += "; colour: orange = kernels, blue-grey = scopes and frames";
    $("legend").textContent = text;
  }
  function matcher(query) {
    if (query.length > 2 && query[0] === "/" && query[query.length - 1] === "/") {
      try { var rx = new RegExp(query.slice(1, -1), "i"); return function (s) { return rx.test(s); }; }
      catch (e) { return null; }
    }
    var q = query.toLowerCase();
    return function (s) { return s.toLowerCase().indexOf(q) >= 0; };
  }
  function search(query) {
    state.query = query;
    var list = $("search-results"), test = query ? matcher(query) : null;
    list.textContent = "";
    if (!test) { state.matches = null; report.matches = 0; $("match-count").textContent = query ? "bad regex" : ""; draw(); return 0; }
    var byName = S.map(test), hits = new Uint8Array(N), count = 0, found = [];
    for (var i = 0; i < N; i++) if (byName[D.name[i]]) { hits[i] = 1; count++; if (found.length < 50) found.push(i); }
    state.matches = hits; report.matches = count;
    $("match-count").textContent = count + (count === 1 ? " match" : " matches");
    document.body.dataset.matches = String(count);
    found.forEach(function (node) {
      var li = document.createElement("li"), path = [], n = node;
      while (n > 0) { path.unshift(S[D.name[n]]); n = D.parent[n]; }
      li.textContent = path.join(" > ");
      li.addEventListener("click", function () { zoomTo(node); });
      list.appendChild(li);
    });
    draw();
    return count;
  }
  function zoomTo(node) { state.zoom = node; $("tip").hidden = true; draw(); }

  // ---- hover details ----
  function hit(px, py) {
    var row = rects.rows[Math.floor(py / ROW)];
    if (!row) return -1;
    var lo = 0, hi = row.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1, r = row[mid];
      if (px < rects.x[r]) hi = mid - 1; else if (px >= rects.x[r] + rects.w[r]) lo = mid + 1; else return rects.node[r];
    }
    return -1;
  }
  function line(box, text, cls) { var div = document.createElement("div"); div.textContent = text; if (cls) div.className = cls; box.appendChild(div); }
  function showTip(node, ev) {
    var tip = $("tip"), wm = widthMetric(), w = widths();
    tip.textContent = "";
    line(tip, S[D.name[node]], "name");
    line(tip, (D.kernel[node] ? "kernel" : "scope / frame") + (D.device[node] >= 0 ? " on " + S[D.device[node]] : ""));
    line(tip, "share: " + (100 * w[node] / (w[0] || 1)).toFixed(2) + " % of all, " + (100 * w[node] / (w[state.zoom] || 1)).toFixed(2) + " % of view (" + wm.label + ")");
    D.metrics.forEach(function (m) {
      var a = m.a[node], text = m.label + ": " + fmt(a, m.unit), ex = exclusive(m, m.a, node);
      if (ex != null && childStart[node + 1] > childStart[node]) text += " (self " + fmt(ex, m.unit) + ")";
      if (diff) { var b = m.b[node]; text += "  vs " + fmt(b, m.unit) + (a != null && b != null ? "  change " + (a - b >= 0 ? "+" : "") + fmt(a - b, m.unit) : ""); }
      if (a != null || (diff && m.b[node] != null)) line(tip, text);
    });
    var md = meta[node];
    if (md) Object.keys(md).forEach(function (k) { line(tip, k.replace(/_/g, " ") + ": " + (Array.isArray(md[k]) ? md[k].join(" x ") : md[k])); });
    var fu = D.kernel[node] && D.fused && Object.prototype.hasOwnProperty.call(D.fused, S[D.name[node]]) ? D.fused[S[D.name[node]]] : null;
    if (fu) Object.keys(fu).forEach(function (k) { line(tip, k.replace(/_/g, " ") + ": " + fu[k].join(", ")); });
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) x = Math.max(ev.clientX - tip.offsetWidth - 14, 0);
    if (y + tip.offsetHeight > window.innerHeight) y = Math.max(ev.clientY - tip.offsetHeight - 14, 0);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function canvasPoint(ev) { var b = canvas.getBoundingClientRect(); return [ev.clientX - b.left, ev.clientY - b.top]; }
  canvas.addEventListener("mousemove", function (ev) {
    var p = canvasPoint(ev), node = hit(p[0], p[1]);
    if (node < 0) $("tip").hidden = true; else showTip(node, ev);
  });
  canvas.addEventListener("mouseleave", function () { $("tip").hidden = true; });
  canvas.addEventListener("click", function (ev) { var p = canvasPoint(ev), node = hit(p[0], p[1]); if (node >= 0) zoomTo(node); });

  // ---- controls ----
  D.metrics.forEach(function (m, k) { var o = document.createElement("option"); o.value = String(k); o.textContent = m.label; $("metric").appendChild(o); });
  $("metric").addEventListener("change", function () { state.metric = +this.value; draw(); });
  $("base").addEventListener("change", function () { state.base = this.value; draw(); });
  $("base-label").hidden = !diff;
  $("search").addEventListener("input", function () { search(this.value); });
  $("reset").addEventListener("click", function () { zoomTo(0); });
  $("up").addEventListener("click", function () { if (D.parent[state.zoom] >= 0) zoomTo(D.parent[state.zoom]); });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape" && D.parent[state.zoom] >= 0) zoomTo(D.parent[state.zoom]); });
  window.addEventListener("resize", function () { draw(); });
  $("source").textContent = D.sources.join(", ") + (diff ? "  minus  " + D.diffSource : "");
  document.title = "FlagTree Profiler: " + D.sources.join(", ");
  $("table").textContent = D.table;
  drawSummary(D.summary);

  // ---- the summary above the icicle (formatted by the viewer; text only) ----
  function drawSummary(sum) {
    if (!sum) return;
    $("summary").hidden = false;
    sum.facts.forEach(function (f) {
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = f[0]; dd.textContent = f[1];
      $("facts").appendChild(dt); $("facts").appendChild(dd);
    });
    fillTable($("top-kernels"), sum.kernels, $("kernels-note"), "kernels");
    fillTable($("top-scopes"), sum.scopes, $("scopes-note"), "scopes");
    if (sum.kernels.note) $("kernels-spread").textContent = sum.kernels.note;
    if (sum.steps) {
      $("steps-kind").textContent = sum.steps.kind === "step" ? "step (top-level scope)" : "tenth of the run (no steps marked)";
      fillTable($("steps"), sum.steps, $("steps-note"), sum.steps.kind + "s"); $("steps-box").hidden = false;
    }
    if (sum.changes) { fillTable($("changes"), sum.changes, $("changes-note"), "kernels"); $("changes-box").hidden = false; }
    if (sum.timeline) drawTimeline(sum.timeline);
  }
  function fillTable(table, part, note, what) {
    var head = document.createElement("tr");
    part.head.forEach(function (h) { var th = document.createElement("th"); th.textContent = h; head.appendChild(th); });
    table.appendChild(head);
    part.rows.forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell, k) {
        var td = document.createElement("td"); td.textContent = cell;
        if (k === 0) td.title = cell;
        tr.appendChild(td);
      });
      table.appendChild(tr);
    });
    note.textContent = part.rows.length ? "(" + part.rows.length + " of " + part.total.toLocaleString("en-US") + " " + what + ")" : "(none timed)";
  }
  // Perfetto's UI takes a trace handed over by postMessage from the window that opened it; the
  // page cannot read the file beside it by itself (file:// and the CSP forbid it), so the user
  // picks it once.
  function drawTimeline(t) {
    var p = $("timeline"), button = document.createElement("button"), text = document.createElement("span");
    button.type = "button"; button.id = "open-perfetto"; button.textContent = "Open " + t.file + " in Perfetto";
    text.textContent = (D.timeline ? "The timeline below is this run's " + t.file + ", drawn offline. Perfetto's web UI (it needs the internet) also opens it: press the button " :
      "This session's timeline (" + t.kind + ") is " + t.file + ", beside the profile: press the button ") +
      "and pick that file (the report hands it to " + PERFETTO + "), or open " + PERFETTO + " and drop the file on it" +
      (t.kind === "Chrome trace" ? "; chrome://tracing opens it too." : ".");
    button.addEventListener("click", function () { $("timeline-file").click(); });
    p.appendChild(button); p.appendChild(text); p.hidden = false;
  }
  $("timeline-file").addEventListener("change", function () {
    var file = this.files && this.files[0];
    if (!file) return;
    var win = window.open(PERFETTO + "/#!/"), reader = new FileReader();
    reader.onload = function () {
      var timer = setInterval(function () { win.postMessage("PING", PERFETTO); }, 50);
      window.addEventListener("message", function pong(ev) {
        if (ev.source !== win || ev.data !== "PONG") return;
        clearInterval(timer); window.removeEventListener("message", pong);
        win.postMessage({ perfetto: { buffer: reader.result, title: file.name, fileName: file.name } }, PERFETTO);
      });
    };
    if (win) reader.readAsArrayBuffer(file);
  });

  // Start-up state from the address (#metric=count&search=add&zoom=12): links and tests use it.
  var params = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var p = kv.split("=");
    try { if (p[0]) params[p[0]] = decodeURIComponent(p[1] || ""); } catch (e) { /* a malformed value is ignored */ }
  });
  var wanted = params.metric || D.initialMetric;  // the address wins over the command's -m
  D.metrics.forEach(function (m, k) { if (m.id === wanted || m.label === wanted) state.metric = k; });
  $("metric").value = String(state.metric);
  if (params.base === "b" && diff) { state.base = "b"; $("base").value = "b"; }
  if (params.zoom && +params.zoom > 0 && +params.zoom < N) state.zoom = +params.zoom;
  if (params.search) { $("search").value = params.search; search(params.search); } else draw();
  // Where the nth (from 0) drawn node of a name sits, rows top down, in page coordinates.
  function where(name, nth) {
    nth = nth || 0;
    var box = canvas.getBoundingClientRect();
    for (var d = 0; d < rects.rows.length; d++) {
      var row = rects.rows[d] || [];
      for (var k = 0; k < row.length; k++) {
        var r = row[k];
        if (S[D.name[rects.node[r]]] === name && nth-- === 0) return { x: box.left + rects.x[r] + rects.w[r] / 2, y: box.top + d * ROW + ROW / 2, node: rects.node[r] };
      }
    }
    return null;
  }
  report.search = search; report.zoom = zoomTo; report.hit = hit; report.state = state; report.where = where;
  report.readyMs = performance.now();
  document.body.dataset.readyMs = report.readyMs.toFixed(1);
})();
