// CatalogBrowser's front end (anywidget ES module; no imports, nothing fetched).
// Python sends the drawn tree as flat int32/uint8 buffers (keys, depths, flags) and
// answers "labels" requests for the rows in view; this module draws only those rows.

const ROW = 26; // px per row
const OVERSCAN = 10;

function typed(value, Type) {
  if (!value) return new Type(0);
  if (value instanceof ArrayBuffer) return new Type(value.slice(0));
  const { buffer, byteOffset, byteLength } = value;
  return new Type(buffer.slice(byteOffset, byteOffset + byteLength));
}

function h(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render({ model, el }) {
  const handlers = [];
  const on = (name, fn) => {
    model.on(name, fn);
    handlers.push([name, fn]);
  };
  const save = (name, value) => {
    model.set(name, value);
    model.save_changes();
  };

  const root = h("div", "sc-browser");
  const banner = h("div", "sc-banner");
  const summary = h("div", "sc-summary");
  const tabs = h("div", "sc-tabs");
  const tabSessions = h("button", "sc-tab", "Sessions");
  const tabProblems = h("button", "sc-tab", "Problems");
  tabs.append(tabSessions, tabProblems);
  const sessions = h("div", "sc-sessions");
  const toolbar = h("div", "sc-toolbar");
  const search = h("input", "sc-search");
  search.type = "search";
  search.placeholder = "search id or label";
  search.setAttribute("aria-label", "search sessions by id or label");
  const clear = h("button", "sc-button", "clear");
  clear.title = "clear the search and every filter";
  const filters = h("div", "sc-filters");
  toolbar.append(search, clear, filters);
  const body = h("div", "sc-body");
  const left = h("div", "sc-left");
  const listbar = h("div", "sc-listbar");
  const listText = h("span", "sc-listtext");
  const switchButton = h("button", "sc-button sc-switch");
  listbar.append(listText, switchButton);
  const scroll = h("div", "sc-scroll");
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "tree");
  const spacer = h("div", "sc-spacer");
  scroll.append(spacer);
  left.append(listbar, scroll);
  const detail = h("div", "sc-detail");
  body.append(left, detail);
  sessions.append(toolbar, body);
  const problems = h("div", "sc-problems");
  const problemKind = h("select", "sc-select");
  problemKind.setAttribute("aria-label", "problem kind");
  const problemsHtml = h("div", "sc-problems-html");
  problems.append(problemKind, problemsHtml);
  root.append(banner, summary, tabs, sessions, problems);
  el.append(root);

  // ------------------------------------------------------------------ state
  const lists = {
    tree: { keys: new Int32Array(0), depths: new Int32Array(0), flags: new Uint8Array(0), cursor: 0 },
    results: { keys: new Int32Array(0), depths: null, flags: new Uint8Array(0), cursor: 0 },
  };
  const labels = { tree: new Map(), results: new Map() };
  const pending = { tree: new Set(), results: new Set() };
  let requestTimer = null;
  let selectTimer = null;
  let frame = 0;

  const showing = () => model.get("showing") || "tree";
  const current = () => lists[showing()];

  function loadTree() {
    lists.tree.keys = typed(model.get("tree_keys"), Int32Array);
    lists.tree.depths = typed(model.get("tree_depths"), Int32Array);
    lists.tree.flags = typed(model.get("tree_flags"), Uint8Array);
    lists.tree.cursor = Math.min(lists.tree.cursor, Math.max(0, lists.tree.keys.length - 1));
  }
  function loadResults() {
    lists.results.keys = typed(model.get("result_keys"), Int32Array);
    lists.results.flags = typed(model.get("result_flags"), Uint8Array);
    lists.results.cursor = 0;
    if (showing() === "results") scroll.scrollTop = 0;
  }

  function requestLabels(kind, keys) {
    for (const key of keys) pending[kind].add(key);
    if (requestTimer) return;
    requestTimer = setTimeout(() => {
      requestTimer = null;
      for (const which of ["tree", "results"]) {
        const wanted = [...pending[which]].filter((k) => !labels[which].has(k));
        pending[which].clear();
        if (wanted.length) model.send({ type: "labels", results: which === "results", keys: wanted });
      }
    }, 15);
  }

  function draw() {
    frame = 0;
    const kind = showing();
    const list = lists[kind];
    const n = list.keys.length;
    spacer.style.height = `${Math.max(n * ROW, 1)}px`;
    const height = scroll.clientHeight || 480;
    const first = Math.max(0, Math.floor(scroll.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(n, Math.ceil((scroll.scrollTop + height) / ROW) + OVERSCAN);
    const selected = model.get("selected");
    const fragment = document.createDocumentFragment();
    const missing = [];
    for (let i = first; i < last; i++) {
      const key = list.keys[i];
      const flags = list.flags[i] || 0;
      const row = h("div", "sc-row");
      row.dataset.index = String(i);
      row.style.top = `${i * ROW}px`;
      row.setAttribute("role", "treeitem");
      if (key === selected) row.classList.add("sc-selected");
      if (i === list.cursor) row.classList.add("sc-cursor");
      const depth = list.depths ? list.depths[i] : 0;
      row.style.paddingLeft = `${4 + depth * 16}px`;
      const toggle = h("span", "sc-toggle", flags & 1 ? (flags & 2 ? "▾" : "▸") : "");
      if (flags & 1) {
        toggle.title = kind === "tree" ? (flags & 2 ? "collapse" : "expand") : "show in the tree, expanded";
        row.setAttribute("aria-expanded", flags & 2 ? "true" : "false");
      }
      const label = labels[kind].get(key);
      const text = h("span", "sc-label", label ? label[0] : "…");
      if (label) {
        row.title = `${label[0]}\n${label[1]}`; // the whole label (it may be cut off) and the path
        if (label[2]) row.classList.add(`sc-${label[2]}`);
      } else missing.push(key);
      row.append(toggle, text);
      if (kind === "results") {
        const reveal = h("span", "sc-reveal", "show in tree");
        reveal.title = "open its ancestors in the tree and scroll to it";
        row.append(reveal);
      }
      fragment.append(row);
    }
    spacer.replaceChildren(fragment);
    if (missing.length) requestLabels(kind, missing);
    const filtering = model.get("filtering");
    if (kind === "results") {
      listText.innerHTML = model.get("results_label") || "";
      switchButton.textContent = "tree";
      switchButton.title = "show the tree (the search and filters stay set)";
      switchButton.hidden = false;
    } else {
      listText.textContent = `${n.toLocaleString()} rows`;
      switchButton.textContent = `back to the results (${lists.results.keys.length.toLocaleString()})`;
      switchButton.hidden = !filtering;
    }
  }
  function schedule() {
    if (!frame) frame = requestAnimationFrame(draw);
  }

  function scrollToIndex(index, center) {
    const list = current();
    if (index < 0 || index >= list.keys.length) return;
    list.cursor = index;
    spacer.style.height = `${Math.max(list.keys.length * ROW, 1)}px`;
    const height = scroll.clientHeight || 480;
    const top = index * ROW;
    if (center) scroll.scrollTop = Math.max(0, top - height / 2 + ROW / 2);
    else if (top < scroll.scrollTop) scroll.scrollTop = top;
    else if (top + ROW > scroll.scrollTop + height) scroll.scrollTop = top + ROW - height;
    draw();
  }

  function select(index, delay) {
    const list = current();
    const key = list.keys[index];
    if (key === undefined) return;
    clearTimeout(selectTimer);
    const apply = () => {
      if (model.get("selected") !== key) save("selected", key);
    };
    if (delay) selectTimer = setTimeout(apply, delay);
    else apply();
  }

  function activate(index, expand) {
    const kind = showing();
    const list = lists[kind];
    if (index < 0 || index >= list.keys.length) return;
    list.cursor = index;
    if (kind === "results") model.send({ type: "reveal", key: list.keys[index], expand: !!expand });
    else if (list.flags[index] & 1) model.send({ type: "toggle", index });
    schedule();
  }

  // ----------------------------------------------------------------- events
  scroll.addEventListener("scroll", schedule);
  const resize = new ResizeObserver(schedule);
  resize.observe(scroll);
  scroll.addEventListener("click", (event) => {
    const row = event.target.closest(".sc-row");
    if (!row) return;
    const index = Number(row.dataset.index);
    const list = current();
    list.cursor = index;
    scroll.focus({ preventScroll: true });
    if (event.target.classList.contains("sc-reveal")) model.send({ type: "reveal", key: list.keys[index] });
    else if (event.target.classList.contains("sc-toggle") && list.flags[index] & 1) activate(index, true);
    else select(index, 0);
    schedule();
  });
  scroll.addEventListener("dblclick", (event) => {
    const row = event.target.closest(".sc-row");
    if (row && showing() === "results") model.send({ type: "reveal", key: current().keys[Number(row.dataset.index)] });
  });
  scroll.addEventListener("keydown", (event) => {
    const kind = showing();
    const list = lists[kind];
    const n = list.keys.length;
    if (!n) return;
    const page = Math.max(1, Math.floor((scroll.clientHeight || 480) / ROW) - 1);
    let next = null;
    switch (event.key) {
      case "ArrowDown":
        next = Math.min(n - 1, list.cursor + 1);
        break;
      case "ArrowUp":
        next = Math.max(0, list.cursor - 1);
        break;
      case "PageDown":
        next = Math.min(n - 1, list.cursor + page);
        break;
      case "PageUp":
        next = Math.max(0, list.cursor - page);
        break;
      case "Home":
        next = 0;
        break;
      case "End":
        next = n - 1;
        break;
      case "ArrowRight":
        if (kind === "results") activate(list.cursor, true);
        else if (list.flags[list.cursor] & 2) next = Math.min(n - 1, list.cursor + 1);
        else activate(list.cursor, true);
        break;
      case "ArrowLeft":
        if (kind === "tree") {
          if (list.flags[list.cursor] & 2) activate(list.cursor, false);
          else {
            const depth = list.depths[list.cursor];
            let up = list.cursor - 1;
            while (up >= 0 && list.depths[up] >= depth) up--;
            if (up >= 0) next = up;
          }
        }
        break;
      case "Enter":
        if (kind === "results") activate(list.cursor, false);
        else if (list.flags[list.cursor] & 1) activate(list.cursor, true);
        else select(list.cursor, 0);
        break;
      default:
        return;
    }
    event.preventDefault();
    event.stopPropagation(); // keep JupyterLab's notebook shortcuts out of the tree
    if (next !== null) {
      scrollToIndex(next, false);
      select(next, 120);
    }
  });

  let searchTimer = null;
  const pushSearch = () => {
    clearTimeout(searchTimer);
    if (model.get("search") !== search.value) save("search", search.value);
  };
  search.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") pushSearch();
  });
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(pushSearch, 350);
  });
  clear.addEventListener("click", () => {
    search.value = "";
    model.set("search", "");
    for (const [name] of model.get("choices") || []) model.set(name, null);
    model.save_changes();
  });
  switchButton.addEventListener("click", () => save("showing", showing() === "tree" ? "results" : "tree"));
  tabSessions.addEventListener("click", () => save("tab", "sessions"));
  tabProblems.addEventListener("click", () => save("tab", "problems"));
  problemKind.addEventListener("change", () => save("problem_kind", problemKind.value));

  // ------------------------------------------------------------- model sync
  const selects = new Map();
  function buildFilters() {
    filters.replaceChildren();
    selects.clear();
    for (const [name, values] of model.get("choices") || []) {
      const wrap = h("label", "sc-filter");
      const caption = h("span", "sc-filter-name", name);
      const control = h("select", "sc-select");
      control.dataset.filter = name;
      control.append(new Option("(any)", ""));
      values.forEach((value, i) => control.append(new Option(String(value), String(i))));
      control.addEventListener("change", () => {
        const picked = control.value === "" ? null : values[Number(control.value)];
        save(name, picked);
      });
      wrap.append(caption, control);
      filters.append(wrap);
      selects.set(name, { control, values });
      syncFilter(name);
      on(`change:${name}`, () => syncFilter(name));
    }
  }
  function syncFilter(name) {
    const { control, values } = selects.get(name);
    const value = model.get(name);
    if (value === null || value === undefined) {
      control.value = "";
      return;
    }
    let index = values.indexOf(value);
    if (index < 0) {
      values.push(value);
      index = values.length - 1;
      control.append(new Option(String(value), String(index)));
    }
    control.value = String(index);
  }
  function syncHeader() {
    banner.innerHTML = model.get("banner") || "";
    summary.innerHTML = model.get("summary") || "";
  }
  function syncTab() {
    const tab = model.get("tab");
    sessions.hidden = tab !== "sessions";
    problems.hidden = tab !== "problems";
    tabSessions.classList.toggle("sc-active", tab === "sessions");
    tabProblems.classList.toggle("sc-active", tab === "problems");
    if (tab === "sessions") schedule();
  }
  function syncProblems() {
    const kinds = model.get("problem_kinds") || [];
    problemKind.replaceChildren(...kinds.map((k) => new Option(k, k)));
    problemKind.value = model.get("problem_kind");
    problemsHtml.innerHTML = model.get("problems_html") || "";
    tabProblems.textContent = `Problems (${model.get("problem_count")})`;
  }
  function syncDetail() {
    const html = model.get("detail");
    detail.innerHTML =
      html ||
      '<div class="sc-placeholder">select a session (click, or ↑ ↓ in the list) to see its header, ' +
        "catalog row, descriptors, list_agents texts, problems, transcript and events</div>";
    detail.scrollTop = 0;
  }

  on("change:tree_keys", () => {
    loadTree();
    schedule();
  });
  on("change:tree_depths change:tree_flags", () => {
    loadTree();
    schedule();
  });
  on("change:result_keys change:result_flags", () => {
    loadResults();
    schedule();
  });
  on("change:showing change:filtering change:results_label change:selected", schedule);
  on("change:showing", () => {
    scroll.scrollTop = current().cursor * ROW - (scroll.clientHeight || 480) / 2;
  });
  on("change:scroll_to", () => {
    const [index] = model.get("scroll_to");
    if (showing() === "tree") {
      loadTree();
      scrollToIndex(index, true);
      scroll.focus({ preventScroll: true });
    }
  });
  on("change:search", () => {
    if (document.activeElement !== search) search.value = model.get("search");
  });
  on("change:detail", syncDetail);
  on("change:banner change:summary", syncHeader);
  on("change:tab", syncTab);
  on("change:problems_html change:problem_kinds change:problem_kind", syncProblems);
  on("msg:custom", (message) => {
    if (!message || message.type !== "labels") return;
    const kind = message.results ? "results" : "tree";
    for (const [key, text, tip, style] of message.rows) labels[kind].set(key, [text, tip, style]);
    schedule();
  });

  loadTree();
  loadResults();
  buildFilters();
  search.value = model.get("search") || "";
  syncHeader();
  syncTab();
  syncProblems();
  syncDetail();
  draw();
  const [initial] = model.get("scroll_to") || [-1];
  if (initial >= 0 && showing() === "tree") requestAnimationFrame(() => scrollToIndex(initial, true));

  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    resize.disconnect();
    clearTimeout(requestTimer);
    clearTimeout(selectTimer);
    clearTimeout(searchTimer);
  };
}

export default { render };
