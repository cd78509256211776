// CatalogBrowser's front end (anywidget ES module; no imports, nothing fetched).
// Python sends the drawn tree as flat int32/uint8 buffers (keys, depths, flags) and
// answers "labels" requests for the rows in view; this module draws only those rows.

const ROW = 26; // px per row
const OVERSCAN = 10;
const GRIP = 10; // px of the resize bar under the list
const MIN_TREE = 120; // px: the smallest list a drag (or tree_height) leaves
const MIN_AUTO = 8 * ROW + 2; // px: a fitted list is at least this tall (a few rows more or less do not move the page)
const STACKED = 800; // px of widget width under which the detail pane goes below the list (browser.css)
const TL_ROW = 14; // px per child in the children timeline
const TL_CURVE = 40; // px of the concurrency curve above it
const SORTS = [
  ["created", "created (oldest first)"],
  ["duration", "duration"],
  ["cost", "cost"],
  ["tokens", "tokens"],
  ["failed_tools", "failed tools"],
];

// A duration for reading: the steps of frames.units.human_duration (the one duration format).
function humanMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  ms = Math.max(0, ms);
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
  const two = (big, small, a, b) => (small ? `${big} ${a} ${small} ${b}` : `${big} ${a}`);
  const whole = Math.floor(s), minutes = Math.floor(whole / 60);
  if (minutes < 60) return two(minutes, whole % 60, "min", "s");
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return two(hours, minutes % 60, "h", "min");
  return two(Math.floor(hours / 24), hours % 24, "d", "h");
}

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

// A keyboard stop: in the tab order, with its role and its name for assistive technology.
function focusable(node, role, label) {
  node.tabIndex = 0;
  node.setAttribute("role", role);
  node.setAttribute("aria-label", label);
  return node;
}

// The index of `key` in `keys` nearest to `near` (a session can be drawn twice when ids repeat).
function indexOfKey(keys, key, near) {
  if (key === null || key === undefined) return -1;
  if (near >= 0 && near < keys.length && keys[near] === key) return near;
  let best = -1;
  for (let i = 0; i < keys.length; i++) {
    if (keys[i] === key && (best < 0 || Math.abs(i - near) < Math.abs(best - near))) best = i;
  }
  return best;
}

// The element whose visible height the widget should fit: the nearest ancestor that really scrolls
// (JupyterLab's notebook panel, a scrolled output area); null when none does (the window then).
function scrollingAncestor(node) {
  for (let up = node.parentElement; up; up = up.parentElement) {
    const overflow = getComputedStyle(up).overflowY;
    if ((overflow === "auto" || overflow === "scroll") && up.scrollHeight > up.clientHeight + 1) return up;
  }
  return null;
}

// The selected session's children over time: a concurrency curve and one bar per child (from its first to
// its last own event, coloured by outcome), drawn on two canvases. Only the rows in view are drawn, so a
// 1,000-child hub costs what 20 children cost: the DOM holds a handful of nodes whatever the count.
// A click (or Enter on the focused list) reveals the child in the tree.
function childrenTimeline(reveal, pane) {
  const box = h("div", "sc-timeline");
  const head = h("div", "sc-tl-head");
  const legend = h("div", "sc-tl-legend");
  const curve = h("canvas", "sc-tl-curve");
  const scroller = focusable(h("div", "sc-tl-scroll"), "listbox", "children over time (↑ ↓, Enter: reveal)");
  const spacer = h("div", "sc-tl-spacer");
  const canvas = h("canvas", "sc-tl-canvas");
  const note = h("div", "sc-tl-note");
  spacer.append(canvas);
  scroller.append(spacer);
  box.append(head, legend, curve, scroller, note);
  let data = null;
  let cursor = -1;
  let hover = -1;
  let frame = 0;

  const labelWidth = (width) => Math.min(220, Math.round(width * 0.38));
  const xOf = (t, width) => {
    const left = labelWidth(width) + 6;
    return left + (t / data.span) * Math.max(10, width - left - 8);
  };
  function sized(node, width, height) {
    const ratio = window.devicePixelRatio || 1;
    if (node.width !== Math.round(width * ratio) || node.height !== Math.round(height * ratio)) {
      node.width = Math.round(width * ratio);
      node.height = Math.round(height * ratio);
      node.style.width = `${width}px`;
      node.style.height = `${height}px`;
    }
    const ctx = node.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    return ctx;
  }
  function drawCurve(width) {
    const ctx = sized(curve, width, TL_CURVE);
    const peak = Math.max(1, data.peak);
    const y = (n) => TL_CURVE - 4 - (n / peak) * (TL_CURVE - 14);
    ctx.fillStyle = "#555";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.fillText(`running at once (peak ${data.peak})`, 2, 1);
    ctx.beginPath();
    ctx.moveTo(xOf(0, width), y(0));
    let last = 0;
    for (const [t, n] of data.curve) {
      ctx.lineTo(xOf(t, width), y(last));
      ctx.lineTo(xOf(t, width), y(n));
      last = n;
    }
    ctx.lineTo(xOf(data.span, width), y(last));
    ctx.lineTo(xOf(data.span, width), y(0));
    ctx.closePath();
    ctx.fillStyle = "rgba(25, 118, 210, 0.25)";
    ctx.fill();
    ctx.strokeStyle = "#1976d2";
    ctx.stroke();
  }
  function draw() {
    frame = 0;
    if (!data || !box.isConnected) return;
    const width = Math.max(200, scroller.clientWidth);
    const height = scroller.clientHeight || TL_ROW * 8;
    const rows = data.rows;
    drawCurve(width);
    const ctx = sized(canvas, width, height);
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / TL_ROW));
    const last = Math.min(rows.length, Math.ceil((top + height) / TL_ROW));
    const labelW = labelWidth(width);
    ctx.font = "11px var(--jp-code-font-family, monospace)";
    ctx.textBaseline = "middle";
    for (let i = first; i < last; i++) {
      const [, start, end, outcome, label, id] = rows[i];
      const y = i * TL_ROW - top;
      if (i === cursor || i === hover) {
        ctx.fillStyle = i === cursor ? "#d7e9fb" : "#f0f4f8";
        ctx.fillRect(0, y, width, TL_ROW);
      } else if (i % 2) {
        ctx.fillStyle = "#fafafa";
        ctx.fillRect(0, y, width, TL_ROW);
      }
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, y, labelW, TL_ROW);
      ctx.clip();
      ctx.fillStyle = "#222";
      ctx.fillText(label || id, 2, y + TL_ROW / 2);
      ctx.restore();
      const x0 = xOf(start, width);
      const x1 = Math.max(x0 + 2, xOf(end, width));
      ctx.fillStyle = data.colours[outcome] || "#616161";
      ctx.fillRect(x0, y + 2, x1 - x0, TL_ROW - 4);
    }
    canvas.dataset.first = String(first);
    canvas.dataset.last = String(last);
    canvas.dataset.rows = String(rows.length);
    canvas.dataset.session = data.session;
  }
  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(draw);
  };
  function indexAt(event) {
    const rect = canvas.getBoundingClientRect();
    const index = Math.floor((event.clientY - rect.top + scroller.scrollTop) / TL_ROW);
    return data && index >= 0 && index < data.rows.length ? index : -1;
  }
  function describe(index) {
    const [, start, end, outcome, label, id] = data.rows[index];
    return `${label ? `${label} — ` : ""}${id}\n${outcome} · ${humanMs(end - start)} · from +${humanMs(start)}` +
      "\nclick: show it in the tree";
  }
  function setCursor(index) {
    cursor = index;
    if (index < 0) return;
    const top = index * TL_ROW;
    if (top < scroller.scrollTop) scroller.scrollTop = top;
    else if (top + TL_ROW > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + TL_ROW - scroller.clientHeight;
    scroller.setAttribute("aria-activedescendant", "");
    scroller.setAttribute("aria-label", `children over time: ${describe(index).split("\n").slice(0, 2).join(", ")}`);
    schedule();
  }
  canvas.addEventListener("mousemove", (event) => {
    const index = indexAt(event);
    if (index !== hover) {
      hover = index;
      canvas.title = index >= 0 ? describe(index) : "";
      schedule();
    }
  });
  canvas.addEventListener("mouseleave", () => {
    hover = -1;
    schedule();
  });
  canvas.addEventListener("click", (event) => {
    const index = indexAt(event);
    if (index < 0) return;
    setCursor(index);
    const key = data.rows[index][0];
    if (key >= 0) reveal(key);
  });
  scroller.addEventListener("scroll", schedule);
  scroller.addEventListener("keydown", (event) => {
    if (!data || !data.rows.length) return;
    const n = data.rows.length;
    if (event.key === "ArrowDown") setCursor(Math.min(n - 1, cursor + 1));
    else if (event.key === "ArrowUp") setCursor(Math.max(0, cursor - 1));
    else if (event.key === "Home") setCursor(0);
    else if (event.key === "End") setCursor(n - 1);
    else if (event.key === "Enter" && cursor >= 0 && data.rows[cursor][0] >= 0) reveal(data.rows[cursor][0]);
    else return;
    event.preventDefault();
  });
  const resize = new ResizeObserver(schedule);
  resize.observe(scroller);

  return {
    load(value) {
      data = value && value.rows ? value : null;
      cursor = hover = -1;
      if (!data) {
        box.remove();
        return;
      }
      const n = data.rows.length;
      spacer.style.height = `${Math.max(n, 1) * TL_ROW}px`;
      scroller.style.height = `${Math.min(Math.max(n, 1), 16) * TL_ROW}px`;
      scroller.scrollTop = 0;
      head.textContent =
        `children over time: ${n.toLocaleString()} with own events, peak ${data.peak} running at once, ` +
        `over ${humanMs(data.span)}`;
      legend.replaceChildren(
        ...data.outcomes.map((o) => {
          const item = h("span", "sc-tl-key", o);
          item.style.setProperty("--sc-key", data.colours[o] || "#616161");
          return item;
        }),
      );
      note.textContent = data.no_span
        ? `${data.no_span.toLocaleString()} more ${data.no_span === 1 ? "child has" : "children have"} no events of their own (no bar)`
        : "";
      note.hidden = !data.no_span;
      this.place();
    },
    place() {
      const slot = pane.querySelector(".sc-timeline-slot");
      if (!data || !slot) {
        box.remove();
        return;
      }
      if (box.parentElement !== slot) slot.append(box);
      schedule();
    },
    dispose() {
      resize.disconnect();
      if (frame) cancelAnimationFrame(frame);
    },
  };
}

// The selected session's labels in the pane's slot: a chip per label (× takes it off), a box to add one.
// Python writes the label store (CatalogBrowser(corpus, labels=path)) and sends the labels back; without a
// store the labels of a corpus read with labels= are shown, read-only. Built once: the text being typed
// survives a new selection and the answer to an add.
function labelControl(model, pane) {
  const box = h("div", "sc-labelbox");
  const caption = h("span", "sc-labels-caption", "labels");
  const chips = h("span", "sc-label-chips");
  const input = h("input", "sc-label-input");
  input.placeholder = "add a label (Enter)";
  input.setAttribute("aria-label", "a label for this session");
  input.maxLength = 200;
  const note = h("input", "sc-label-note");
  note.placeholder = "note (optional)";
  note.setAttribute("aria-label", "a note with the label");
  const add = h("button", "sc-button sc-label-add", "add label");
  const hint = h("span", "sc-label-hint");
  const error = h("div", "sc-label-error");
  error.setAttribute("role", "alert");
  box.append(caption, chips, input, note, add, hint, error);
  const send = (message) => model.send({ ...message, key: model.get("detail_key") });
  function submit() {
    const label = input.value.trim();
    if (!label) return;
    send({ type: "label-add", label, note: note.value.trim() || null });
    input.value = note.value = "";
  }
  add.addEventListener("click", submit);
  for (const field of [input, note]) {
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        submit();
      }
    });
  }
  chips.addEventListener("click", (event) => {
    const button = event.target.closest("[data-sc-label-remove]");
    if (button) send({ type: "label-remove", label: button.dataset.scLabelRemove });
  });
  return {
    place() {
      const slot = pane.querySelector(".sc-labels-slot");
      const given = model.get("selected_labels") || [];
      const writable = Boolean(model.get("labels_path"));
      if (!slot || (!writable && !given.length)) {
        box.remove();
        return;
      }
      chips.replaceChildren(
        ...given.map(({ label, note: text, author }) => {
          const chip = h("span", "sc-label-chip", label);
          chip.dataset.scLabel = label;
          chip.title = [text, author ? `by ${author}` : ""].filter(Boolean).join("\n");
          if (writable) {
            const remove = h("button", "sc-label-remove", "×");
            remove.dataset.scLabelRemove = label;
            remove.setAttribute("aria-label", `remove the label ${label}`);
            chip.append(remove);
          }
          return chip;
        }),
      );
      if (!given.length) chips.append(h("span", "sc-label-none", "none"));
      for (const node of [input, note, add]) node.hidden = !writable;
      hint.textContent = writable ? "" : "read-only (CatalogBrowser(corpus, labels=path) keeps new ones)";
      error.textContent = model.get("label_error") || "";
      error.hidden = !error.textContent;
      if (box.parentElement !== slot) slot.append(box);
    },
  };
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
  search.placeholder = "search id, label, error code or message";
  search.setAttribute("aria-label", "search sessions by id or label (↓: to the list)");
  const clear = h("button", "sc-button", "clear");
  clear.title = "clear the search and every filter";
  const sortWrap = h("label", "sc-sort");
  const sortSelect = h("select", "sc-select sc-sort-by");
  sortSelect.setAttribute("aria-label", "sort the sessions by");
  for (const [value, text] of SORTS) sortSelect.append(new Option(`sort: ${text}`, value));
  const sortDir = h("button", "sc-button sc-sort-dir");
  sortWrap.append(sortSelect, sortDir);
  const filtersToggle = h("button", "sc-button sc-filters-toggle", "filters");
  filtersToggle.setAttribute("aria-expanded", "false");
  const filters = h("div", "sc-filters");
  toolbar.append(search, sortWrap, clear, filtersToggle, filters);
  const body = h("div", "sc-body");
  const left = h("div", "sc-left");
  const listbar = h("div", "sc-listbar");
  const listText = h("span", "sc-listtext");
  const switchButton = h("button", "sc-button sc-switch");
  listbar.append(listText, switchButton);
  const scroll = focusable(h("div", "sc-scroll"), "tree", "sessions");
  const spacer = h("div", "sc-spacer");
  const empty = h("div", "sc-empty");
  scroll.append(spacer, empty);
  const grip = focusable(h("div", "sc-grip"), "separator", "list height");
  grip.setAttribute("aria-orientation", "horizontal");
  grip.title = "drag (or ↑ ↓) to resize the list; double-click (or Enter) to fit the space again";
  left.append(listbar, scroll, grip);
  const detail = focusable(h("div", "sc-detail"), "region", "the selected session"); // scrolls with the arrows
  const timeline = childrenTimeline((key) => model.send({ type: "reveal", key }), detail);
  const labelBox = labelControl(model, detail);
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
  // cursor: the index of the keyboard cursor; cursorKey: its session, to find it again when the list
  // changes under it (a node opened above it from Python, a reveal...); top: the list's own scroll offset
  const lists = {
    tree: { keys: new Int32Array(0), depths: new Int32Array(0), flags: new Uint8Array(0), cursor: 0, cursorKey: null, top: 0 },
    results: { keys: new Int32Array(0), depths: null, flags: new Uint8Array(0), cursor: 0, cursorKey: null, top: 0 },
  };
  const labels = { tree: new Map(), results: new Map() };
  const pending = { tree: new Set(), results: new Set() };
  let requestTimer = null;
  let selectTimer = null;
  let frame = 0;
  let shown = model.get("showing") || "tree"; // the list the scroll box holds now
  let dragging = null;
  let panel = null;

  const showing = () => model.get("showing") || "tree";
  const current = () => lists[showing()];
  const stacked = () => root.clientWidth > 0 && root.clientWidth < STACKED;

  function setCursor(list, index) {
    list.cursor = index;
    list.cursorKey = index >= 0 && index < list.keys.length ? list.keys[index] : null;
  }

  function loadTree() {
    const list = lists.tree;
    const keys = typed(model.get("tree_keys"), Int32Array);
    // keep the rows in view where they are: the first row in view is found again in the new tree
    const active = shown === "tree";
    const offset = active ? scroll.scrollTop : list.top;
    const anchorIndex = Math.floor(offset / ROW);
    const anchorKey = anchorIndex < list.keys.length ? list.keys[anchorIndex] : null;
    // the cursor's session, or (when a collapse hid it) its nearest ancestor still drawn
    const wanted = [list.cursorKey];
    if (list.keys[list.cursor] === list.cursorKey) {
      for (let i = list.cursor - 1, depth = list.depths[list.cursor]; i >= 0 && depth > 0; i--) {
        if (list.depths[i] < depth) {
          depth = list.depths[i];
          wanted.push(list.keys[i]);
        }
      }
    }
    list.keys = keys;
    list.depths = typed(model.get("tree_depths"), Int32Array);
    list.flags = typed(model.get("tree_flags"), Uint8Array);
    let cursor = -1;
    for (const key of wanted) if (cursor < 0) cursor = indexOfKey(keys, key, list.cursor);
    setCursor(list, cursor >= 0 ? cursor : Math.min(list.cursor, Math.max(0, keys.length - 1)));
    const anchored = indexOfKey(keys, anchorKey, anchorIndex);
    if (anchored >= 0 && anchored !== anchorIndex) {
      list.top = offset + (anchored - anchorIndex) * ROW;
      if (active) {
        spacer.style.height = `${Math.max(keys.length * ROW, 1)}px`;
        scroll.scrollTop = list.top;
      }
    }
  }
  function loadResults() {
    const list = lists.results;
    list.keys = typed(model.get("result_keys"), Int32Array);
    list.flags = typed(model.get("result_flags"), Uint8Array);
    setCursor(list, 0);
    list.top = 0;
    if (shown === "results") scroll.scrollTop = 0;
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

  // ------------------------------------------------------------- heights
  // The list is as tall as its rows (at least 8 rows' worth) up to the room the widget has: the visible
  // height of the panel it scrolls in (or the window), less the widget's own bars, so the whole browser
  // fits in view; stacked (narrow), about half of it, so the detail pane shows below. tree_height (a
  // drag on the grip, or Python) overrides it.
  function room() {
    const view = panel ? panel.clientHeight : Math.min(window.innerHeight || 800, window.screen?.availHeight || 1000);
    const above = scroll.getBoundingClientRect().top - root.getBoundingClientRect().top;
    const space = view - above - GRIP - 12;
    return Math.max(MIN_AUTO, Math.round(stacked() ? space * 0.55 : space));
  }
  function layout() {
    if (dragging) return;
    const n = current().keys.length;
    const wanted = model.get("tree_height");
    const fitted = Math.min(Math.max(n * ROW + 2, MIN_AUTO), room());
    const height = wanted ? Math.max(MIN_TREE, wanted) : fitted;
    if (scroll.style.height !== `${height}px`) scroll.style.height = `${height}px`;
    grip.setAttribute("aria-valuenow", String(height));
    // the pane scrolls in its own box at any width: beside the list as tall as it, below it most of the view
    const view = panel ? panel.clientHeight : window.innerHeight || 800;
    const detailMax = stacked()
      ? `${Math.max(320, Math.round(view * 0.85))}px`
      : `${Math.max(height, room()) + listbar.offsetHeight + GRIP}px`;
    if (detail.style.maxHeight !== detailMax) detail.style.maxHeight = detailMax;
  }

  function draw() {
    frame = 0;
    const kind = showing();
    const list = lists[kind];
    const n = list.keys.length;
    layout();
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
      if (key === selected) {
        row.classList.add("sc-selected");
        row.setAttribute("aria-selected", "true");
      }
      if (i === list.cursor) row.classList.add("sc-cursor");
      const depth = list.depths ? list.depths[i] : 0;
      row.style.paddingLeft = `${4 + depth * 16}px`;
      row.setAttribute("aria-level", String(depth + 1));
      const toggle = h("span", "sc-toggle", flags & 1 ? (flags & 2 ? "▾" : "▸") : "");
      if (flags & 1) {
        toggle.title = kind === "tree" ? (flags & 2 ? "collapse" : "expand") : "show in the tree, expanded";
        row.setAttribute("aria-expanded", flags & 2 ? "true" : "false");
      }
      const label = labels[kind].get(key);
      const text = h("span", "sc-label", label ? label[0] : "…");
      row.append(toggle);
      if (label) {
        row.title = `${label[0]}\n${label[1]}${label[4] ? `\n${label[4]}` : ""}`; // the whole label, the path, the facts
        if (label[2]) row.classList.add(`sc-${label[2]}`);
        if (label[3]) {
          const badge = h("span", `sc-badge sc-o-${label[3]}`, label[3]);
          row.append(badge);
        }
      } else missing.push(key);
      row.append(text);
      if (label && label[4]) row.append(h("span", "sc-facts", label[4]));
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
    empty.hidden = n > 0;
    empty.textContent = kind === "results" ? "no session matches the search and filters" : "no session files";
    if (kind === "results") {
      listText.innerHTML = model.get("results_label") || "";
      switchButton.textContent = "tree";
      switchButton.title = "show the tree (the search and filters stay set)";
      switchButton.hidden = false;
    } else {
      listText.textContent = `${n.toLocaleString()} ${n === 1 ? "row" : "rows"}`;
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
    setCursor(list, index);
    spacer.style.height = `${Math.max(list.keys.length * ROW, 1)}px`;
    layout();
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
    setCursor(list, index);
    if (kind === "results") model.send({ type: "reveal", key: list.keys[index], expand: !!expand });
    else if (list.flags[index] & 1) model.send({ type: "toggle", index });
    schedule();
  }

  // ----------------------------------------------------------------- events
  // Keys typed anywhere in the widget stay in it: JupyterLab's command-mode shortcuts (d d deletes
  // the cell, a/b insert cells, m turns it into Markdown...) must not fire while the tree has focus.
  // Shortcuts with Ctrl, Alt or Meta (save, run...) still reach the notebook.
  root.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey || event.altKey) && event.key !== "Escape") event.stopPropagation();
  });
  scroll.addEventListener("scroll", schedule);
  // The panel, once found, is kept while the widget is in it: a list fitted to the window can make
  // the notebook scroll, and one fitted to the notebook must not make it stop and start again.
  const findPanel = () => {
    const found = scrollingAncestor(root);
    if (found || !(panel && panel.isConnected && panel.contains(root))) panel = found;
  };
  const resize = new ResizeObserver(() => {
    findPanel();
    schedule();
  });
  resize.observe(scroll);
  resize.observe(root);
  const onWindowResize = () => {
    findPanel();
    schedule();
  };
  window.addEventListener("resize", onWindowResize);
  scroll.addEventListener("click", (event) => {
    const row = event.target.closest(".sc-row");
    if (!row) return;
    const index = Number(row.dataset.index);
    const list = current();
    setCursor(list, index);
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
    if (next !== null) {
      scrollToIndex(next, false);
      select(next, 120);
    }
  });

  // the grip under the list: drag it, or focus it and press ↑ ↓ (Enter or a double click: fit again)
  grip.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    grip.setPointerCapture(event.pointerId);
    dragging = { y: event.clientY, height: scroll.offsetHeight };
    root.classList.add("sc-resizing");
  });
  grip.addEventListener("pointermove", (event) => {
    if (!dragging) return;
    const height = Math.max(MIN_TREE, Math.round(dragging.height + event.clientY - dragging.y));
    scroll.style.height = `${height}px`;
    schedule();
  });
  const endDrag = () => {
    if (!dragging) return;
    dragging = null;
    root.classList.remove("sc-resizing");
    save("tree_height", scroll.offsetHeight);
  };
  grip.addEventListener("pointerup", endDrag);
  grip.addEventListener("pointercancel", endDrag);
  grip.addEventListener("dblclick", () => save("tree_height", null));
  grip.addEventListener("keydown", (event) => {
    const height = scroll.offsetHeight;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = (event.key === "ArrowDown" ? 1 : -1) * (event.shiftKey ? 10 : 2) * ROW;
      save("tree_height", Math.max(MIN_TREE, height + step));
    } else if (event.key === "Enter") save("tree_height", null);
    else return;
    event.preventDefault();
  });

  let searchTimer = null;
  const pushSearch = () => {
    clearTimeout(searchTimer);
    if (model.get("search") !== search.value) save("search", search.value);
  };
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") pushSearch();
    else if (event.key === "ArrowDown") {
      // from the search box down into the list (the results as soon as they arrive)
      event.preventDefault();
      pushSearch();
      scroll.focus({ preventScroll: true });
      schedule();
    }
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
  filtersToggle.addEventListener("click", () => {
    const open = root.classList.toggle("sc-filters-open");
    filtersToggle.setAttribute("aria-expanded", String(open));
    schedule();
  });
  switchButton.addEventListener("click", () => save("showing", showing() === "tree" ? "results" : "tree"));
  sortSelect.addEventListener("change", () => save("sort_by", sortSelect.value));
  sortDir.addEventListener("click", () => save("sort_descending", !model.get("sort_descending")));
  function syncSort() {
    const by = model.get("sort_by") || "created";
    sortSelect.value = by;
    sortSelect.classList.toggle("sc-set", by !== "created");
    const down = model.get("sort_descending") !== false;
    sortDir.textContent = down ? "↓" : "↑";
    sortDir.title = down ? "largest first (click: smallest first)" : "smallest first (click: largest first)";
    sortDir.setAttribute("aria-label", sortDir.title);
    sortDir.disabled = by === "created";
  }
  tabSessions.addEventListener("click", () => save("tab", "sessions"));
  tabProblems.addEventListener("click", () => save("tab", "problems"));
  problemKind.addEventListener("change", () => save("problem_kind", problemKind.value));

  // ------------------------------------------------------------- model sync
  const selects = new Map();
  const watched = new Set(); // the filters whose change listener is registered (once: the filters are rebuilt)
  // The findings are computed on the finding filter's first use (a focus is enough): until then it offers none.
  const askFindings = () => {
    if (!model.get("findings_loaded")) model.send({ type: "findings" });
  };
  function buildFilters() {
    filters.replaceChildren();
    selects.clear();
    for (const [name, given] of model.get("choices") || []) {
      const values = [...given];
      const wrap = h("label", "sc-filter");
      const caption = h("span", "sc-filter-name", name === "session_label" ? "label" : name);
      const control = h("select", "sc-select");
      control.dataset.filter = name;
      control.append(new Option("(any)", ""));
      values.forEach((value, i) => control.append(new Option(String(value), String(i))));
      if (name === "finding") control.title = model.get("findings_note") || "";
      if (name === "finding" && !model.get("findings_loaded")) {
        const waiting = new Option("(computed on first use…)", "");
        waiting.disabled = true;
        control.append(waiting);
        control.addEventListener("focus", askFindings);
        control.addEventListener("pointerdown", askFindings);
      }
      control.addEventListener("change", () => {
        const picked = control.value === "" ? null : values[Number(control.value)];
        save(name, picked);
      });
      wrap.append(caption, control);
      filters.append(wrap);
      selects.set(name, { control, values });
      syncFilter(name);
      if (!watched.has(name)) {
        watched.add(name);
        on(`change:${name}`, () => selects.has(name) && syncFilter(name));
      }
    }
    syncFiltersToggle();
  }
  function syncFilter(name) {
    const { control, values } = selects.get(name);
    const value = model.get(name);
    if (value === null || value === undefined) control.value = "";
    else {
      let index = values.indexOf(value);
      if (index < 0) {
        values.push(value);
        index = values.length - 1;
        control.append(new Option(String(value), String(index)));
      }
      control.value = String(index);
    }
    control.classList.toggle("sc-set", control.value !== "");
    syncFiltersToggle();
  }
  function syncFiltersToggle() {
    const set = [...selects.keys()].filter((name) => model.get(name) !== null && model.get(name) !== undefined);
    filtersToggle.textContent = set.length ? `filters (${set.length} set)` : "filters";
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
  // Links inside the pane (the waterfall's bars, the jump-to-error control) scroll the pane to their
  // step: an id looked up inside this pane, never the notebook's page (its URL is left alone).
  let errorAt = -1; // the failed step last jumped to (an index into the control's data-sc-errors)
  function jumpTo(id) {
    const target = id ? detail.querySelector(`[id="${CSS.escape(id)}"]`) : null;
    if (!target) return;
    for (const old of detail.querySelectorAll(".sc-target")) old.classList.remove("sc-target");
    target.classList.add("sc-target");
    target.scrollIntoView({ block: "center" });
    const errors = (detail.querySelector("[data-sc-errors]")?.dataset.scErrors || "").split(" ");
    if (errors.includes(id)) errorAt = errors.indexOf(id);
  }
  detail.addEventListener("click", (event) => {
    const button = event.target.closest("[data-sc-jump]");
    if (button) {
      const errors = (button.closest("[data-sc-errors]")?.dataset.scErrors || "").split(" ").filter(Boolean);
      if (!errors.length) return;
      const back = button.dataset.scJump === "prev";
      errorAt = back ? (errorAt <= 0 ? errors.length - 1 : errorAt - 1) : (errorAt + 1) % errors.length;
      jumpTo(errors[errorAt]);
      return;
    }
    const link = event.target.closest("a");
    const href = link ? link.getAttribute("href") || "" : "";
    if (!href.startsWith("#")) return;
    event.preventDefault();
    jumpTo(decodeURIComponent(href.slice(1)));
  });
  function syncDetail() {
    errorAt = -1;
    const html = model.get("detail");
    detail.innerHTML =
      html ||
      '<div class="sc-placeholder">select a session (click, or ↑ ↓ in the list) to see how its run went, ' +
        "its children over time, header, catalog row, descriptors, list_agents texts, problems, transcript and events</div>";
    detail.scrollTop = 0;
    timeline.place();
    labelBox.place();
    syncLoading();
  }
  // A new selection dims the pane until Python's answer (the detail of that session) arrives.
  function syncLoading() {
    const selected = model.get("selected");
    const busy = selected !== null && selected !== undefined && selected !== model.get("detail_key");
    detail.classList.toggle("sc-loading", busy);
    if (busy) detail.setAttribute("aria-busy", "true");
    else detail.removeAttribute("aria-busy");
  }
  // Switching lists: each keeps its own scroll offset and cursor.
  function syncShowing() {
    const next = showing();
    if (next === shown) return;
    lists[shown].top = scroll.scrollTop;
    shown = next;
    spacer.style.height = `${Math.max(lists[next].keys.length * ROW, 1)}px`;
    layout();
    scroll.scrollTop = lists[next].top;
    draw();
  }
  // A selection made elsewhere (Python, another view): move the cursor to it and bring it into
  // view when the shown list holds it (a session the list does not hold is left to reveal()).
  function syncSelected() {
    const key = model.get("selected");
    const list = current();
    const index = indexOfKey(list.keys, key, list.cursor);
    if (index >= 0 && !dragging) scrollToIndex(index, false);
    else schedule();
  }

  on("change:tree_keys change:tree_depths change:tree_flags", () => {
    loadTree();
    schedule();
  });
  on("change:result_keys change:result_flags", () => {
    loadResults();
    schedule();
  });
  on("change:showing", syncShowing);
  on("change:filtering change:results_label change:tree_height", schedule);
  on("change:selected", () => {
    syncLoading();
    syncSelected();
  });
  on("change:detail_key", syncLoading);
  on("change:scroll_to", () => {
    const [index] = model.get("scroll_to");
    if (showing() !== shown) syncShowing();
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
  on("change:timeline", () => timeline.load(model.get("timeline")));
  on("change:selected_labels change:labels_path change:label_error", () => labelBox.place());
  on("change:choices change:findings_loaded change:findings_note", () => {
    const focused = document.activeElement?.dataset?.filter;
    buildFilters();
    if (focused && selects.has(focused)) selects.get(focused).control.focus({ preventScroll: true });
  });
  on("change:sort_by change:sort_descending", syncSort);
  on("change:banner change:summary", syncHeader);
  on("change:tab", syncTab);
  on("change:problems_html change:problem_kinds change:problem_kind", syncProblems);
  on("msg:custom", (message) => {
    if (!message || message.type !== "labels") return;
    const kind = message.results ? "results" : "tree";
    for (const [key, text, tip, style, outcome, facts] of message.rows)
      labels[kind].set(key, [text, tip, style, outcome, facts]);
    schedule();
  });

  loadTree();
  loadResults();
  buildFilters();
  search.value = model.get("search") || "";
  syncHeader();
  syncTab();
  syncProblems();
  timeline.load(model.get("timeline"));
  syncDetail();
  syncSort();
  draw();
  const [initial] = model.get("scroll_to") || [-1];
  requestAnimationFrame(() => {
    findPanel(); // known once the view is in the page
    if (initial >= 0 && showing() === "tree") scrollToIndex(initial, true);
    else syncSelected();
  });

  return () => {
    for (const [name, fn] of handlers) model.off(name, fn);
    resize.disconnect();
    timeline.dispose();
    window.removeEventListener("resize", onWindowResize);
    clearTimeout(requestTimer);
    clearTimeout(selectTimer);
    clearTimeout(searchTimer);
    if (frame) cancelAnimationFrame(frame);
  };
}

export default { render };
