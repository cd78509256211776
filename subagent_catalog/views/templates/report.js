(function () {
  "use strict";
  // The session forest: a JSON blob expanded on demand, PAGE children at a time.
  // Every value from the corpus reaches the page through textContent/title only.
  var PAGE = 100;
  var SHOW = 96;
  var blob = document.getElementById("forest-data");
  var treeEl = document.getElementById("tree");
  if (!blob || !treeEl) { return; }
  var data = JSON.parse(blob.textContent);
  var N = data.nodes;
  var rendered = {};

  function clip(text, n) { return text.length <= n ? text : text.slice(0, n) + "\u2026"; }
  function flat(text) { return text.replace(/\r\n|\r|\n/g, " \u23ce ").replace(/[\u0000-\u001f\u007f]/g, "\ufffd"); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function bounded(text) { return text.length > 1000 ? text.slice(0, 1000) + "\u2026" : text; }

  function badge(n) {
    if (n.k === "c") { return el("span", "badge k-c", n.m || "child"); }
    if (n.k === "d") { return el("span", "badge r-" + n.r, String(n.r)); }
    if (n.k === "o") { return el("span", "badge k-o", "omitted"); }
    if (n.k === "s") { return el("span", "badge k-s", "session"); }
    return null;
  }

  function nodeEl(idx) {
    var n = N[idx];
    var li = el("li", "node " + n.k);
    li.setAttribute("role", "treeitem");
    li.dataset.idx = String(idx);
    var row = el("div", "row");
    var kids = n.n || [];
    var tog = el("button", "tog", kids.length ? "\u25b8" : "");
    tog.type = "button";
    if (kids.length) {
      tog.setAttribute("aria-expanded", "false");
      tog.setAttribute("aria-label", "expand " + kids.length + " children");
      tog.addEventListener("click", function () { toggle(li); });
    } else {
      tog.classList.add("leaf");
      tog.disabled = true;
      tog.setAttribute("aria-hidden", "true");
    }
    row.appendChild(tog);
    var idLimit = n.k === "g" ? 120 : 48;
    var id = el("bdi", "id k-" + n.k + "-id", clip(flat(n.i), idLimit));
    if (n.i.length > idLimit) { id.title = bounded(n.i); }
    row.appendChild(n.k === "g" ? id : wrapCode(id));
    var b = badge(n);
    if (b) { row.appendChild(b); }
    if (n.l !== undefined) {
      var lbl = el("bdi", "lbl", clip(flat(n.l), SHOW));
      lbl.title = bounded(n.l);
      row.appendChild(lbl);
    }
    var meta = [];
    if (n.w) { meta.push(clip(flat(n.w), 60)); }
    if (n.u) { meta.push(n.u); }
    if (n.v) { meta.push("read: " + n.v); }
    if (n.t) { meta.push(n.t); }
    if (n.z) { meta.push(n.z + " below" + (n.e ? ", " + n.e + (n.e > 1 ? " diagnostics" : " diagnostic") : "")); }
    if (meta.length) {
      var m = el("span", "meta", meta.join(" \u00b7 "));
      if (n.x) { m.title = bounded(n.x); }
      row.appendChild(m);
    }
    li.appendChild(row);
    rendered[idx] = li;
    return li;
  }

  function wrapCode(inner) { var c = el("code", null); c.appendChild(inner); return c; }

  function fill(ul, list, upTo) {
    var start = Number(ul.dataset.shown || "0");
    var end = Math.min(list.length, Math.max(start + PAGE, upTo === undefined ? 0 : upTo + 1));
    var more = ul.lastElementChild;
    if (more && more.classList.contains("more-li")) { ul.removeChild(more); }
    for (var i = start; i < end; i++) { ul.appendChild(nodeEl(list[i])); }
    ul.dataset.shown = String(end);
    if (end < list.length) {
      var li = el("li", "more-li");
      var btn = el("button", "more-btn", "show " + Math.min(PAGE, list.length - end) + " more of " + (list.length - end));
      btn.type = "button";
      btn.addEventListener("click", function () { fill(ul, list); });
      li.appendChild(btn);
      ul.appendChild(li);
    }
  }

  function toggle(li, open) {
    var idx = Number(li.dataset.idx);
    var tog = li.querySelector(":scope > .row > .tog");
    var ul = li.querySelector(":scope > ul");
    var want = open === undefined ? !(ul && !ul.hidden) : open;
    if (want && !ul) {
      ul = el("ul", null);
      ul.setAttribute("role", "group");
      li.appendChild(ul);
      fill(ul, N[idx].n);
    }
    if (ul) { ul.hidden = !want; }
    tog.textContent = want ? "\u25be" : "\u25b8";
    tog.setAttribute("aria-expanded", want ? "true" : "false");
    return ul;
  }

  function reveal(idx) {
    var path = [];
    for (var p = idx; p !== undefined && p !== null; p = N[p].p) { path.unshift(p); }
    var top = path[0];
    var topPos = data.roots.indexOf(top);
    if (!rendered[top] && topPos >= 0) { fill(treeEl, data.roots, topPos); }
    for (var i = 0; i < path.length - 1; i++) {
      var li = rendered[path[i]];
      if (!li) { return; }
      var ul = toggle(li, true);
      var pos = N[path[i]].n.indexOf(path[i + 1]);
      if (!rendered[path[i + 1]] && ul) { fill(ul, N[path[i]].n, pos); }
    }
    var target = rendered[idx];
    if (!target) { return; }
    var hits = treeEl.querySelectorAll(".row.hit");
    for (var h = 0; h < hits.length; h++) { hits[h].classList.remove("hit"); }
    var row = target.querySelector(":scope > .row");
    row.classList.add("hit");
    row.scrollIntoView({ block: "center" });
  }

  treeEl.textContent = "";
  treeEl.dataset.shown = "0";
  if (data.roots.length) {
    fill(treeEl, data.roots);
  } else {
    treeEl.appendChild(el("li", "muted", "no listed sessions"));
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target instanceof HTMLElement && target.classList.contains("reveal")) {
      var idx = Number(target.dataset.node);
      if (!isNaN(idx) && N[idx]) {
        document.getElementById("forest").scrollIntoView();
        reveal(idx);
      }
    }
  });

  var form = document.getElementById("tree-search");
  var results = document.getElementById("search-results");
  var status = document.getElementById("search-status");
  if (form && results && status) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var q = document.getElementById("tree-query").value.trim().toLowerCase();
      results.textContent = "";
      if (!q) { status.textContent = ""; return; }
      var found = 0;
      for (var i = 0; i < N.length; i++) {
        var n = N[i];
        if (n.k === "g") { continue; }
        if (n.i.toLowerCase().indexOf(q) < 0 && (n.l === undefined || n.l.toLowerCase().indexOf(q) < 0)) { continue; }
        found++;
        if (found > 50) { continue; }
        var li = el("li", null);
        li.appendChild(wrapCode(el("bdi", null, clip(flat(n.i), 48))));
        if (n.l !== undefined) { li.appendChild(document.createTextNode(" \u2014 ")); li.appendChild(el("bdi", null, clip(flat(n.l), 80))); }
        var b = el("button", "reveal", "show");
        b.type = "button";
        b.dataset.node = String(i);
        li.appendChild(b);
        results.appendChild(li);
      }
      status.textContent = found ? (found > 50 ? "first 50 of " + found + " matches" : found + " match" + (found > 1 ? "es" : "")) : "no match";
    });
  }
})();
