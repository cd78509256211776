// The dashboard's table of affected sessions: its HTML comes from Python (the `value` trait); with a linked
// browser (`clickable`) a row with a session id (data-sid) is a button: a click, Enter or Space sets `clicked`.
function render({ model, el }) {
  el.classList.add("sc-rows");
  const draw = () => {
    el.innerHTML = model.get("value") || "";
    const clickable = Boolean(model.get("clickable"));
    el.classList.toggle("sc-rows-clickable", clickable);
    for (const row of el.querySelectorAll("tr[data-sid]")) {
      if (clickable) {
        row.tabIndex = 0;
        row.setAttribute("role", "button");
        row.setAttribute("aria-label", `reveal ${row.dataset.sid} in the browser`);
        row.title = "reveal this session in the browser";
      } else {
        row.removeAttribute("tabindex");
        row.removeAttribute("role");
        row.removeAttribute("aria-label");
        row.removeAttribute("title");
      }
    }
  };
  const reveal = (event) => {
    if (!model.get("clickable")) return;
    const row = event.target.closest("tr[data-sid]");
    if (!row || !el.contains(row)) return;
    if (event.type === "keydown") {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
    } else if (event.target.closest("a, button, input, select, textarea")) {
      return; // a link or control inside the row keeps its own click
    }
    model.set("clicked", row.dataset.sid);
    model.save_changes();
  };
  el.addEventListener("click", reveal);
  el.addEventListener("keydown", reveal);
  model.on("change:value change:clickable", draw);
  draw();
  return () => {
    el.removeEventListener("click", reveal);
    el.removeEventListener("keydown", reveal);
  };
}

export default { render };
