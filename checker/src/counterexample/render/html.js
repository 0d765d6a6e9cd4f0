// Draws the counterexample from the JSON in #data; writes "ready: ..." into #status when
// done and any error into #errors (a headless browser reads both).
(function () {
  "use strict";
  var status = document.getElementById("status");
  var errors = document.getElementById("errors");
  function fail(message) {
    errors.textContent += message + "\n";
    document.body.setAttribute("data-state", "error");
    status.textContent = "error";
  }
  window.addEventListener("error", function (e) { fail(String(e.message || e)); });

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = text; }
    return node;
  }
  function where(e) {
    if (!e.file) { return "no source line"; }
    var base = e.file.split("/").pop();
    return base + ":" + e.line + (e.code ? "  " + e.code : "");
  }

  function stateView(title, state) {
    var box = el("div");
    box.appendChild(el("h2", {}, title));
    // One row per semaphore, one column per device: narrow for a few devices.
    var semTable = el("table", { "id": "semaphores" });
    var head = el("tr");
    head.appendChild(el("th", {}, "semaphore"));
    state.devices.forEach(function (d) { head.appendChild(el("th", {}, d.device)); });
    semTable.appendChild(head);
    state.devices[0].semaphores.forEach(function (s, k) {
      var row = el("tr");
      row.appendChild(el("td", {}, s[0]));
      state.devices.forEach(function (d) {
        var v = d.semaphores[k][1];
        row.appendChild(el("td", v !== 0 ? { "class": "nonzero" } : {}, String(v)));
      });
      semTable.appendChild(row);
    });
    box.appendChild(el("h2", {}, "semaphores"));
    box.appendChild(semTable);
    box.appendChild(el("h2", {}, "DMAs in flight (" + state.dmas.length + ")"));
    var list = el("ul", { "id": "dmas" });
    state.dmas.forEach(function (m) { list.appendChild(el("li", {}, m.dma + ": " + m.state)); });
    if (!state.dmas.length) { list.appendChild(el("li", {}, "none")); }
    box.appendChild(list);
    box.appendChild(el("h2", {}, "next operation and slots"));
    state.devices.forEach(function (d) {
      box.appendChild(el("div", {}, d.device + ": " + (d.next || "finished")));
      if (d.cells.length) {
        var t = el("table");
        d.cells.forEach(function (c) {
          var r = el("tr");
          r.appendChild(el("td", {}, c[0]));
          r.appendChild(el("td", {}, c[1]));
          t.appendChild(r);
        });
        box.appendChild(t);
      }
    });
    if (state.shared.length) {
      var s = el("table");
      state.shared.forEach(function (c) {
        var r = el("tr");
        r.appendChild(el("td", {}, "shared " + c[0]));
        r.appendChild(el("td", {}, c[1]));
        s.appendChild(r);
      });
      box.appendChild(s);
    }
    return box;
  }

  function draw(data) {
    var detail = document.getElementById("detail");
    var rows = [];
    var selected = null;
    function select(i, scroll) {
      if (selected !== null) { rows[selected].classList.remove("selected"); }
      selected = i;
      rows[i].classList.add("selected");
      if (scroll) { rows[i].scrollIntoView({ block: "nearest" }); }
      var e = data.events[i];
      detail.textContent = "";
      detail.appendChild(el("h2", {}, "event " + e.index + " on d" + e.device + (e.breaks ? ": breaks the rule" : "")));
      detail.appendChild(el("div", { "class": "source", "id": "source" }, e.name));
      detail.appendChild(el("p", {}, where(e)));
      if (e.role) { detail.appendChild(el("p", { "id": "role" }, e.role + (e.note ? ": " + e.note : ""))); }
      detail.appendChild(stateView(e.breaks ? "state as it breaks the rule" : "state after it", e.state));
      document.body.setAttribute("data-selected", String(e.index));
    }

    if (data.violation) {
      // A message may name its rule already (a deadlock's is `deadlock: ...`): said once.
      var message = data.violation.message, prefix = data.violation.rule + ": ";
      document.getElementById("violation").textContent =
        message.indexOf(prefix) === 0 ? message : prefix + message;
    }
    document.getElementById("minimized").textContent = data.minimized ? "minimised: " + data.minimized : "";

    var lanes = document.getElementById("lanes");
    var head = el("tr");
    head.appendChild(el("th", { "class": "num" }, "#"));
    data.devices.forEach(function (d) { head.appendChild(el("th", {}, d)); });
    lanes.appendChild(head);
    var highlighted = 0;
    data.events.forEach(function (e, i) {
      var row = el("tr", { "data-index": String(e.index) });
      row.appendChild(el("td", { "class": "num" }, String(e.index)));
      data.devices.forEach(function (_, d) {
        if (d !== e.device) { row.appendChild(el("td")); return; }
        var cls = "event";
        if (e.role) { cls += " core " + e.role; highlighted += 1; }
        if (e.breaks) { cls += " breaks"; }
        if (e.wrong) { cls += " wrong"; }
        var cell = el("td", { "class": cls, "title": where(e) + (e.note ? "\n" + e.note : "") });
        if (e.role) { cell.appendChild(el("span", { "class": "role" }, e.role)); }
        cell.appendChild(document.createTextNode(e.name));
        cell.addEventListener("click", function () { select(i); });
        row.appendChild(cell);
      });
      if (!e.role) { row.classList.add("plain"); }
      lanes.appendChild(row);
      rows.push(row);
    });

    var list = document.getElementById("explanation");
    data.explanation.forEach(function (p) {
      var item = el("li", { "class": p.role + (p.wrong ? " wrong" : "") });
      var number = p.role === "summary" || p.index === null ? "- " : p.index + ". ";
      item.appendChild(el("span", { "class": "role" }, p.role));
      item.appendChild(document.createTextNode(number + p.text));
      if (p.note && p.role !== "summary") { item.appendChild(el("span", { "class": "note" }, p.note)); }
      if (p.role !== "summary" && p.index !== null) {
        item.addEventListener("click", function () { select(p.index - 1, true); });
      }
      list.appendChild(item);
    });

    document.getElementById("only").addEventListener("change", function (ev) {
      rows.forEach(function (r) {
        if (r.classList.contains("plain")) { r.classList.toggle("hidden", ev.target.checked); }
      });
    });
    document.addEventListener("keydown", function (ev) {
      if (selected === null) { return; }
      if (ev.key === "ArrowDown" && selected + 1 < rows.length) { select(selected + 1, true); ev.preventDefault(); }
      if (ev.key === "ArrowUp" && selected > 0) { select(selected - 1, true); ev.preventDefault(); }
    });

    // Start at the event that breaks the rule (or the last one).
    if (rows.length) {
      var start = data.events.findIndex(function (e) { return e.breaks; });
      select(start >= 0 ? start : rows.length - 1);
    } else {
      detail.appendChild(stateView("initial state", data.initial));
    }
    return highlighted;
  }

  try {
    var data = JSON.parse(document.getElementById("data").textContent);
    var highlighted = draw(data);
    status.textContent = "ready: " + data.events.length + " events, " + highlighted + " highlighted";
    document.body.setAttribute("data-state", "ready");
  } catch (e) {
    fail((e && e.stack) || String(e));
  }
})();
