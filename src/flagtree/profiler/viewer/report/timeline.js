// The run's own timeline, drawn from the report's data (report_timeline.py): one lane per host
// thread (its scopes) above one lane per device stream (its kernels). Wheel or buttons zoom,
// dragging pans, a click shows an event's details. Zoomed out, events narrower than a pixel are
// drawn as the pixel columns they cover, and the status line says how many. Text only through
// textContent and fillText.
(function () {
  "use strict";
  var R = window.__report, T = R && R.data && R.data.timeline;
  if (!T || !T.lanes.length) return;
  var ROW_H = 14, HEAD_H = 15, GAP = 6;
  var $ = function (id) { return document.getElementById(id); };
  var canvas = $("tl-canvas"), ctx = canvas.getContext("2d"), S = T.strings;
  var lanes = T.lanes.length, top = [], maxDur = [], end = 1, i, k;
  var y = 0;
  for (k = 0; k < lanes; k++) {
    top.push(y); y += HEAD_H + T.lanes[k].rows * ROW_H + GAP;
    var m = 0;
    for (i = T.laneStart[k]; i < T.laneStart[k + 1]; i++) { m = Math.max(m, T.dur[i]); end = Math.max(end, T.start[i] + T.dur[i]); }
    maxDur.push(m);
  }
  var height = y, view = { t0: 0, t1: end }, api = R.timeline = { drawn: 0, covered: 0, view: view, selected: null };

  function hue(s) { var h = 0; for (var j = 0; j < s.length; j++) h = (h * 31 + s.charCodeAt(j)) | 0; return Math.abs(h) % 360; }
  function fmtNs(v) {
    var units = ["ns", "us", "ms", "s"], u = 0;
    while (u < 3 && Math.abs(v) >= 1000) { v /= 1000; u++; }
    return (u === 0 ? Math.round(v) : v.toFixed(3)) + " " + units[u];
  }
  // First event of lane k that may reach t: starts are sorted, none lasts longer than maxDur[k].
  function firstFrom(k, t) {
    var lo = T.laneStart[k], hi = T.laneStart[k + 1], want = t - maxDur[k];
    while (lo < hi) { var mid = (lo + hi) >> 1; if (T.start[mid] < want) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function draw() {
    var width = Math.max(200, canvas.parentNode.clientWidth - 2), dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr; canvas.height = height * dpr;
    canvas.style.width = width + "px"; canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px ui-monospace, monospace"; ctx.textBaseline = "middle";
    var scale = width / (view.t1 - view.t0), drawn = 0, covered = 0;
    for (var lane = 0; lane < lanes; lane++) {
      ctx.fillStyle = "#555"; ctx.fillText(T.lanes[lane].label, 2, top[lane] + HEAD_H / 2);
      var cover = {}, last = T.laneStart[lane + 1];
      for (var e = firstFrom(lane, view.t0); e < last && T.start[e] <= view.t1; e++) {
        var x0 = (T.start[e] - view.t0) * scale, x1 = (T.start[e] + T.dur[e] - view.t0) * scale;
        if (x1 < 0) continue;
        var ry = top[lane] + HEAD_H + T.row[e] * ROW_H;
        if (x1 - x0 < 1) { cover[T.row[e] * 1e6 + Math.floor(x0)] = ry; covered++; continue; }
        var name = S[T.name[e]];
        ctx.fillStyle = T.lanes[lane].device ? "hsl(" + hue(name) + ",60%,62%)" : "hsl(" + hue(name) + ",25%,80%)";
        ctx.fillRect(x0, ry, Math.max(1, x1 - x0 - 0.5), ROW_H - 1);
        if (x1 - x0 > 30) { ctx.fillStyle = "#111"; ctx.fillText(name.slice(0, Math.floor((x1 - x0) / 7)), Math.max(x0, 0) + 2, ry + ROW_H / 2); }
        drawn++;
      }
      ctx.fillStyle = "#78909c";
      Object.keys(cover).forEach(function (key) { ctx.fillRect(+key % 1e6, cover[key], 1, ROW_H - 1); });
    }
    api.drawn = drawn; api.covered = covered;
    $("tl-status").textContent = "showing " + fmtNs(view.t0) + " to " + fmtNs(view.t1) + " of " + fmtNs(end) + ": " +
      drawn.toLocaleString("en-US") + " events drawn one by one" +
      (covered ? ", " + covered.toLocaleString("en-US") + " narrower than a pixel drawn as the pixel columns they cover (zoom in to see them one by one)" : "") +
      (T.left ? "; the report keeps the " + (T.total - T.left).toLocaleString("en-US") + " longest of " + T.total.toLocaleString("en-US") + " events" : "") + ".";
  }
  function zoom(factor, at) {  // at: the time kept under the pointer
    var t0 = at - (at - view.t0) * factor, t1 = at + (view.t1 - at) * factor;
    view.t0 = Math.max(0, t0); view.t1 = Math.min(end, Math.max(view.t0 + 10, t1)); draw();
  }
  function timeAt(px) { return view.t0 + px / canvas.clientWidth * (view.t1 - view.t0); }
  // The event under (px, py) in canvas pixels, or -1; narrow events within 2 px count.
  function hit(px, py) {
    for (var lane = 0; lane < lanes; lane++) {
      var row = Math.floor((py - top[lane] - HEAD_H) / ROW_H);
      if (row < 0 || row >= T.lanes[lane].rows) continue;
      var slack = 2 * (view.t1 - view.t0) / canvas.clientWidth, t = timeAt(px), best = -1;
      for (var e = firstFrom(lane, t - slack); e < T.laneStart[lane + 1] && T.start[e] <= t + slack; e++) {
        if (T.row[e] === row && T.start[e] + T.dur[e] >= t - slack && (best < 0 || T.dur[e] > T.dur[best])) best = e;
      }
      return best;
    }
    return -1;
  }
  function show(e) {
    var box = $("tl-details"); box.textContent = "";
    api.selected = e < 0 ? null : S[T.name[e]];
    if (e < 0) return;
    var lane = 0;
    while (T.laneStart[lane + 1] <= e) lane++;
    [S[T.name[e]], "start " + fmtNs(T.start[e]) + ", duration " + fmtNs(T.dur[e]), T.lanes[lane].label]
      .concat(S[T.detail[e]] ? S[T.detail[e]].split("\n") : []).forEach(function (text, n) {
        var div = document.createElement("div"); div.textContent = text; if (n === 0) div.className = "name"; box.appendChild(div);
      });
  }
  var drag = null;
  canvas.addEventListener("wheel", function (ev) { ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.8 : 1.25, timeAt(ev.offsetX)); }, { passive: false });
  canvas.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false }; });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    var dt = (ev.clientX - drag.x) / canvas.clientWidth * (drag.t1 - drag.t0);
    if (Math.abs(ev.clientX - drag.x) > 2) drag.moved = true;
    var width = drag.t1 - drag.t0;
    view.t0 = Math.min(Math.max(0, drag.t0 - dt), end - width); view.t1 = view.t0 + width; draw();
  });
  window.addEventListener("mouseup", function (ev) {
    if (drag && !drag.moved && ev.target === canvas) show(hit(ev.offsetX, ev.offsetY));
    drag = null;
  });
  $("tl-in").addEventListener("click", function () { zoom(0.5, (view.t0 + view.t1) / 2); });
  $("tl-out").addEventListener("click", function () { zoom(2, (view.t0 + view.t1) / 2); });
  $("tl-reset").addEventListener("click", function () { view.t0 = 0; view.t1 = end; draw(); });
  window.addEventListener("resize", draw);
  api.zoomTo = function (t0, t1) { view.t0 = Math.max(0, t0); view.t1 = Math.min(end, t1); draw(); };
  api.click = function (px, py) { var e = hit(px, py); show(e); return api.selected; };
  api.laneTop = top; api.rowHeight = ROW_H; api.headHeight = HEAD_H; api.end = end;
  $("timeline-view").hidden = false;
  $("tl-note").textContent = "(" + T.file + ": " + T.total.toLocaleString("en-US") + " events, " + lanes + " lanes)";
  draw();
})();
