(function () {
  "use strict";
  // The session forest and the diagnostics table: one JSON blob, expanded on demand.
  // The tree renders PAGE children at a time; the table DIAG_PAGE rows at a time.
  // Every value from the corpus reaches the page through textContent/title/value only.
  var PAGE = 100;
  var SHOW = 96;
  var DIAG_PAGE = 50;
  var EXPAND_LIMIT = 300;
  var RESULT_LIMIT = 50;
  // Charts: switch a chart between its linear and its log-scale drawing.
  document.addEventListener("click", function (event) {
    var b = event.target;
    if (!(b instanceof HTMLElement) || !b.classList.contains("scale")) { return; }
    var fig = b.closest("figure");
    var log = b.dataset.scale === "log";
    fig.querySelector(".view-linear").hidden = log;
    fig.querySelector(".view-log").hidden = !log;
    var all = fig.querySelectorAll("button.scale");
    for (var i = 0; i < all.length; i++) { all[i].setAttribute("aria-pressed", all[i] === b ? "true" : "false"); }
  });
  var blob = document.getElementById("forest-data");
  var treeEl = document.getElementById("tree");
  if (!blob || !treeEl) { return; }
  var data = JSON.parse(blob.textContent);
  var N = data.nodes;
  var places = data.places || { projects: [], names: [], j: [], f: [] };
  var diags = data.diagnostics || [];
  var rendered = {};
  var filter = null; // {keep: Uint8Array, target: Uint8Array} while the tree is filtered

  function clip(text, n) { return text.length <= n ? text : text.slice(0, n) + "\u2026"; }
  function flat(text) { return text.replace(/\r\n|\r|\n/g, " \u23ce ").replace(/[\u0000-\u001f\u007f]/g, "\ufffd"); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function bounded(text) { return text.length > 1000 ? text.slice(0, 1000) + "\u2026" : text; }
  function clipped(tag, cls, text, n) {
    var e = el(tag, cls, clip(flat(text), n));
    if (text.length > n) { e.title = bounded(text); }
    return e;
  }
  function wrapCode(inner, cls) { var c = el("code", cls || null); c.appendChild(inner); return c; }
  // A session by its name and short id, as views/names.py name_html draws it (its id alone without a name).
  function named(name, id) {
    // an id alone wraps as every id cell does; beside a name it is one short line (NAME_CSS)
    var code = wrapCode(clipped("bdi", null, id, 80), name ? "id nm-id" + (id.length > 14 ? " nm-clip" : "") : "id");
    if (!name) { return code; }
    code.title = bounded(id);
    var box = el("span", "nm");
    box.appendChild(clipped("bdi", "nm-t", name, 60));
    box.appendChild(document.createTextNode(" "));
    box.appendChild(code);
    return box;
  }
  // A path that breaks only after a "/" (never inside a directory or file name).
  function pathEl(path) {
    var c = el("code", "path");
    var text = clip(path, 200);
    if (path.length > 200) { c.title = bounded(path); }
    var parts = text.split("/");
    parts.forEach(function (part, i) {
      c.appendChild(el("span", "seg", i < parts.length - 1 ? part + "/" : part));
      if (i < parts.length - 1) { c.appendChild(document.createElement("wbr")); }
    });
    return c;
  }
  function plural(n, one, many) { return n.toLocaleString("en-US") + " " + (n === 1 ? one : many); }
  function pathOf(i) {
    var f = places.f[i];
    if (typeof f === "string") { return f; }
    if (f === undefined || f < 0) { return ""; }
    return places.projects[places.j[i]] + "/" + N[i].i + "/" + places.names[f];
  }

  // ------------------------------------------------------------------ tree

  function kids(idx) {
    var list = N[idx].n || [];
    return filter ? list.filter(function (k) { return filter.keep[k]; }) : list;
  }
  function rootList() { return filter ? data.roots.filter(function (r) { return filter.keep[r]; }) : data.roots; }

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
    var list = kids(idx);
    var tog = el("button", "tog", list.length ? "\u25b8" : "");
    tog.type = "button";
    if (list.length) {
      tog.setAttribute("aria-expanded", "false");
      tog.setAttribute("aria-label", "expand " + list.length + (list.length === 1 ? " child" : " children"));
      tog.addEventListener("click", function () { toggle(li); });
    } else {
      tog.classList.add("leaf");
      tog.disabled = true;
      tog.setAttribute("aria-hidden", "true");
    }
    row.appendChild(tog);
    var id = clipped("bdi", "id k-" + n.k + "-id", n.i, n.k === "g" ? 120 : 48);
    row.appendChild(n.k === "g" ? id : wrapCode(id));
    var b = badge(n);
    if (b) { row.appendChild(b); }
    if (n.u) { row.appendChild(el("span", "cause", n.u)); }
    if (n.l !== undefined) {
      var lbl = el("bdi", "lbl", clip(flat(n.l), SHOW));
      lbl.title = bounded(n.l);
      row.appendChild(lbl);
    }
    var meta = [];
    if (n.w) { meta.push(clip(flat(n.w), 60)); }
    if (n.v) { meta.push("read: " + n.v); }
    if (n.t) { meta.push(n.t); }
    if (n.z) { meta.push(n.z + " below" + (n.e ? ", " + n.e + (n.e > 1 ? " diagnostics" : " diagnostic") : "")); }
    if (meta.length) {
      var m = el("span", "meta", meta.join(" \u00b7 "));
      if (n.x) { m.title = bounded(n.x); }
      row.appendChild(m);
    }
    if (n.x) { row.appendChild(clipped("span", "detail", n.x, 120)); }
    li.appendChild(row);
    rendered[idx] = li;
    return li;
  }

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
      ul.dataset.shown = "0";
      fill(ul, kids(idx));
    }
    if (ul) { ul.hidden = !want; }
    tog.textContent = want ? "\u25be" : "\u25b8";
    tog.setAttribute("aria-expanded", want ? "true" : "false");
    return ul;
  }

  function clearHits() {
    var hits = treeEl.querySelectorAll(".row.hit");
    for (var h = 0; h < hits.length; h++) { hits[h].classList.remove("hit"); }
  }

  // Open the tree down to node idx (rendering pages as needed); its row, or null.
  function expandTo(idx) {
    if (filter && !filter.keep[idx]) { clearFilters(); }
    var path = [];
    for (var p = idx; p !== undefined && p !== null; p = N[p].p) { path.unshift(p); }
    var top = path[0];
    var roots = rootList();
    var topPos = roots.indexOf(top);
    if (!rendered[top] && topPos >= 0) { fill(treeEl, roots, topPos); }
    for (var i = 0; i < path.length - 1; i++) {
      var li = rendered[path[i]];
      if (!li) { return null; }
      var ul = toggle(li, true);
      var list = kids(path[i]);
      if (!rendered[path[i + 1]] && ul) { fill(ul, list, list.indexOf(path[i + 1])); }
    }
    var target = rendered[idx];
    return target ? target.querySelector(":scope > .row") : null;
  }

  function reveal(idx) {
    var row = expandTo(idx);
    if (!row) { return; }
    clearHits();
    row.classList.add("hit");
    row.scrollIntoView({ block: "center" });
  }

  function diagnosticsUnder(idx) {
    var out = [];
    var stack = [idx];
    while (stack.length) {
      var i = stack.pop();
      if (N[i].k === "d") { out.push(i); }
      var list = N[i].n || [];
      for (var k = list.length - 1; k >= 0; k--) { stack.push(list[k]); }
    }
    return out;
  }

  // "show" on a tree: open it, and down to every diagnostic in it (the first one scrolled to).
  function revealTree(idx) {
    var found = diagnosticsUnder(idx);
    if (!found.length) { reveal(idx); return; }
    if (filter && found.some(function (d) { return !filter.keep[d]; })) { clearFilters(); }
    clearHits();
    var first = null;
    var top = expandTo(idx);
    if (top) { top.classList.add("hit"); }
    for (var i = 0; i < found.length; i++) {
      var row = expandTo(found[i]);
      if (row) { row.classList.add("hit"); first = first || row; }
    }
    (first || top).scrollIntoView({ block: "center" });
    if (tf.status) { tf.status.textContent = "opened down to " + plural(found.length, "diagnostic", "diagnostics") + " in this tree"; }
  }

  function render() {
    rendered = {};
    treeEl.scrollTop = 0;
    treeEl.textContent = "";
    treeEl.dataset.shown = "0";
    var roots = rootList();
    if (roots.length) {
      fill(treeEl, roots);
    } else {
      treeEl.appendChild(el("li", "muted", filter ? "no session matches the filters" : "no listed sessions"));
    }
  }

  // ------------------------------------------------------------------ tree filters

  function byId(id) { return document.getElementById(id); }
  function fillSelect(select, values, counts) {
    if (!select) { return; }
    values.forEach(function (v) {
      var o = el("option", null, counts ? v.label + " (" + counts[v.value] + ")" : v.label);
      o.value = v.value;
      select.appendChild(o);
    });
  }
  function tally(list, key) {
    var c = {};
    list.forEach(function (x) { var v = key(x); if (v !== undefined) { c[v] = (c[v] || 0) + 1; } });
    return c;
  }
  function options(counts, order) {
    return Object.keys(counts).sort(order || function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); })
      .map(function (k) { return { value: k, label: k }; });
  }

  var diagNodes = N.filter(function (n) { return n.k === "d"; });
  var reasonCounts = tally(diagNodes, function (n) { return n.r; });
  var causeCounts = tally(diagNodes, function (n) { return n.u; });
  var projectCounts = tally(N.map(function (_, i) { return i; }), function (i) {
    return N[i].k === "g" || places.j[i] === undefined || places.j[i] < 0 ? undefined : String(places.j[i]);
  });
  var tf = {
    reason: byId("tree-reason"), cause: byId("tree-cause"), project: byId("tree-project"),
    damaged: byId("tree-damaged"), status: byId("filter-status"), clear: byId("tree-clear")
  };
  fillSelect(tf.reason, options(reasonCounts), reasonCounts);
  fillSelect(tf.cause, options(causeCounts), causeCounts);
  fillSelect(tf.project, Object.keys(projectCounts).sort(function (a, b) {
    return places.projects[a] < places.projects[b] ? -1 : 1;
  }).map(function (k) { return { value: k, label: clip(places.projects[Number(k)], 60) }; }), projectCounts);

  function clearFilters() {
    ["reason", "cause", "project"].forEach(function (k) { if (tf[k]) { tf[k].value = ""; } });
    if (tf.damaged) { tf.damaged.checked = false; }
    filter = null;
    if (tf.status) { tf.status.textContent = ""; }
    render();
  }

  function applyFilters() {
    var reason = tf.reason ? tf.reason.value : "";
    var cause = tf.cause ? tf.cause.value : "";
    var project = tf.project ? tf.project.value : "";
    var damaged = tf.damaged ? tf.damaged.checked : false;
    if (!reason && !cause && !project && !damaged) { clearFilters(); return; }
    var narrow = reason || cause || damaged;
    var keep = new Uint8Array(N.length);
    var target = new Uint8Array(N.length);
    var targets = [];
    for (var i = 0; i < N.length; i++) {
      var n = N[i];
      if (n.k === "g") { continue; }
      if (narrow && n.k !== "d") { continue; }
      if (reason && n.r !== reason) { continue; }
      if (cause && n.u !== cause) { continue; }
      if (project && String(places.j[i]) !== project) { continue; }
      target[i] = 1;
      targets.push(i);
      for (var p = i; p !== undefined && p !== null && !keep[p]; p = N[p].p) { keep[p] = 1; }
    }
    filter = { keep: keep, target: target };
    render();
    var trees = rootList().length;
    var what = narrow ? plural(targets.length, "diagnostic row", "diagnostic rows") : plural(targets.length, "session", "sessions");
    var text = what + " in " + plural(trees, "tree", "trees");
    if (narrow && targets.length <= EXPAND_LIMIT) {
      targets.forEach(function (t) { var row = expandTo(t); if (row) { row.classList.add("hit"); } });
      text += ", opened down to each";
    } else if (narrow) {
      text += " (more than " + EXPAND_LIMIT + ": expand the trees, or narrow the filters)";
    }
    if (tf.status) { tf.status.textContent = text; }
  }
  ["reason", "cause", "project", "damaged"].forEach(function (k) {
    if (tf[k]) { tf[k].addEventListener("change", applyFilters); }
  });
  if (tf.clear) { tf.clear.addEventListener("click", clearFilters); }

  render();

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target instanceof HTMLElement && target.classList.contains("reveal")) {
      var idx = Number(target.dataset.node);
      if (target.dataset.node !== undefined && target.dataset.node !== "" && !isNaN(idx) && N[idx]) {
        if (target.dataset.all) { revealTree(idx); } else { reveal(idx); }
      }
    }
  });

  // ------------------------------------------------------------------ search

  function revealButton(idx, text) {
    var b = el("button", "reveal", text || "show");
    b.type = "button";
    b.dataset.node = String(idx);
    return b;
  }

  var errorIndex = data.errors || [];
  var form = byId("tree-search");
  var results = byId("search-results");
  var status = byId("search-status");
  if (form && results && status) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var q = byId("tree-query").value.trim().toLowerCase();
      results.textContent = "";
      if (!q) { status.textContent = ""; return; }
      var found = 0;
      function has(v) { return v !== undefined && v !== null && String(v).toLowerCase().indexOf(q) >= 0; }
      for (var i = 0; i < N.length; i++) {
        var n = N[i];
        if (n.k === "g") { continue; }
        var path = pathOf(i);
        var where = has(n.i) ? "" : has(n.l) ? "" : has(n.u) ? "cause" : has(n.x) ? "detail" : has(path) ? "path" : has(n.r) ? "reason" : null;
        if (where === null) { continue; }
        found++;
        if (found > RESULT_LIMIT) { continue; }
        var li = el("li", null);
        li.appendChild(wrapCode(el("bdi", null, clip(flat(n.i), 48))));
        if (n.l !== undefined) { li.appendChild(document.createTextNode(" \u2014 ")); li.appendChild(el("bdi", null, clip(flat(n.l), 80))); }
        if (n.k === "d") { li.appendChild(document.createTextNode(" ")); li.appendChild(badge(n)); }
        if (where === "cause" || where === "detail") { li.appendChild(el("span", "muted", " " + where + ": " + clip(flat(where === "cause" ? n.u : n.x), 80))); }
        if (where === "path") { li.appendChild(document.createTextNode(" ")); li.appendChild(wrapCode(el("bdi", null, clip(path, 100)), "path")); }
        li.appendChild(revealButton(i));
        results.appendChild(li);
      }
      // Failed runs by their error code and message (the page's error index: the Failed runs table's runs first).
      for (var e = 0; e < errorIndex.length; e++) {
        var x = errorIndex[e];
        var hit = has(x.c) ? "code" : has(x.m) ? "error" : null;
        if (hit === null) { continue; }
        found++;
        if (found > RESULT_LIMIT) { continue; }
        var item = el("li", "error-hit");
        item.appendChild(wrapCode(el("bdi", null, x.i === null ? "(no id)" : clip(flat(x.i), 48))));
        item.appendChild(el("span", "muted", " " + hit + ": " + (x.c ? x.c + " \u00b7 " : "") + clip(flat(x.m || ""), 80)));
        if (x.r !== null) {
          var link = el("a", null, "failed run");
          link.href = "#fail-" + x.r;
          item.appendChild(document.createTextNode(" "));
          item.appendChild(link);
        }
        if (x.n !== null) { item.appendChild(revealButton(x.n)); }
        results.appendChild(item);
      }
      status.textContent = found ? (found > RESULT_LIMIT ? "first " + RESULT_LIMIT + " of " + found + " matches" : found + " match" + (found > 1 ? "es" : "")) : "no match";
    });
  }

  // ------------------------------------------------------------------ diagnostics table

  var body = byId("diag-body");
  if (!body) { return; }
  var df = { reason: byId("diag-reason"), cause: byId("diag-cause"), query: byId("diag-query"), status: byId("diag-status") };
  var pager = byId("diag-pager");
  var dReason = tally(diags, function (d) { return d.r; });
  var dCause = tally(diags, function (d) { return d.u; });
  fillSelect(df.reason, options(dReason), dReason);
  fillSelect(df.cause, options(dCause), dCause);
  var sortKey = null;
  var sortDir = 1;
  var pageAt = 0;
  var shown = diags;

  function cell(tr, child, cls) {
    var td = el("td", cls || null);
    if (child) { td.appendChild(child); }
    tr.appendChild(td);
    return td;
  }
  // Each cell takes its column's priority class and heading from the header (views/table_columns.py).
  var diagHeads = document.querySelectorAll("#diag-table thead th");
  function fitRow(tr) {
    for (var c = 0; c < tr.children.length && c < diagHeads.length; c++) {
      var found = /\bp[123]\b/.exec(diagHeads[c].className);
      if (found) { tr.children[c].classList.add(found[0]); }
      if (c > 0) { tr.children[c].setAttribute("data-h", diagHeads[c].textContent); }
    }
  }
  function drawTable() {
    body.textContent = "";
    var pages = Math.max(1, Math.ceil(shown.length / DIAG_PAGE));
    pageAt = Math.min(pageAt, pages - 1);
    var start = pageAt * DIAG_PAGE;
    var end = Math.min(shown.length, start + DIAG_PAGE);
    for (var i = start; i < end; i++) {
      var d = shown[i];
      var tr = el("tr", null);
      cell(tr, d.o === null || d.o === undefined ? null : revealButton(d.o, "reveal"));
      cell(tr, named(d.n, d.i), "idc");
      cell(tr, named(d.m, d.p), "idc");
      cell(tr, el("span", "badge r-" + d.r, d.r));
      cell(tr, el("span", "cause", d.u));
      cell(tr, d.x ? clipped("bdi", null, d.x, 160) : null, "wide");
      cell(tr, pathEl(d.f), "pathc");
      var line = cell(tr, d.l !== undefined ? document.createTextNode(String(d.l)) : null, "num");
      if (d.k) { line.title = d.k; }
      fitRow(tr);
      body.appendChild(tr);
    }
    if (!shown.length) {
      var none = el("tr", null);
      var td = el("td", "muted", "no diagnostic row matches the filters");
      td.colSpan = 8;
      none.appendChild(td);
      body.appendChild(none);
    }
    if (df.status) {
      df.status.textContent = shown.length === diags.length ? plural(diags.length, "row", "rows")
        : plural(shown.length, "row", "rows") + " of " + diags.length.toLocaleString("en-US");
    }
    if (!pager) { return; }
    pager.textContent = "";
    if (pages < 2) { return; }
    function go(label, to, disabled) {
      var b = el("button", null, label);
      b.type = "button";
      b.disabled = disabled;
      b.addEventListener("click", function () { pageAt = to; drawTable(); });
      pager.appendChild(b);
    }
    go("\u00ab first", 0, pageAt === 0);
    go("\u2039 previous", pageAt - 1, pageAt === 0);
    pager.appendChild(el("span", "muted", " rows " + (start + 1) + "\u2013" + end + " of " + shown.length.toLocaleString("en-US") + " "));
    go("next \u203a", pageAt + 1, pageAt >= pages - 1);
    go("last \u00bb", pages - 1, pageAt >= pages - 1);
  }
  function refilter() {
    var r = df.reason ? df.reason.value : "";
    var c = df.cause ? df.cause.value : "";
    var q = df.query ? df.query.value.trim().toLowerCase() : "";
    shown = diags.filter(function (d) {
      if (r && d.r !== r) { return false; }
      if (c && d.u !== c) { return false; }
      if (!q) { return true; }
      return [d.i, d.p, d.x, d.f, d.u].some(function (v) { return v && v.toLowerCase().indexOf(q) >= 0; });
    });
    if (sortKey) {
      var key = sortKey;
      shown = shown.slice().sort(function (a, b) {
        var x = a[key], y = b[key];
        if (x === undefined || x === null) { return 1; }
        if (y === undefined || y === null) { return -1; }
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
      });
    }
    pageAt = 0;
    drawTable();
  }
  var heads = document.querySelectorAll("#diag-table button.sort");
  for (var h = 0; h < heads.length; h++) {
    heads[h].addEventListener("click", function (event) {
      var key = event.currentTarget.dataset.key;
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      for (var k = 0; k < heads.length; k++) { heads[k].removeAttribute("aria-sort"); heads[k].parentNode.removeAttribute("aria-sort"); }
      event.currentTarget.parentNode.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      refilter();
    });
  }
  if (df.reason) { df.reason.addEventListener("change", refilter); }
  if (df.cause) { df.cause.addEventListener("change", refilter); }
  if (df.query) { df.query.addEventListener("input", refilter); }
  var filtersForm = byId("diag-filters");
  if (filtersForm) { filtersForm.addEventListener("submit", function (event) { event.preventDefault(); }); }
  refilter();
})();
