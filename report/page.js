// mm2ctl report: draws the charts from the page's data and builds its sortable, filterable tables.
// The data is the JSON document in #mm2ctl-data (report/page.py writes it); nothing is fetched.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("mm2ctl-data").textContent);
  var PAGE = 500; // table rows drawn at a time; "show more" draws the next ones
  var state = (window.mm2ctlReport = { ready: false, charts: 0, scriptMs: performance.now() });

  function number(v) {
    return v === null || v === undefined ? "—" : Number(v).toLocaleString("en-US");
  }
  function age(v) {
    if (v === null || v === undefined) return "—";
    var s = Math.round(v);
    if (s < 120) return s + " s";
    var m = Math.floor(s / 60);
    if (m < 120) return m + " min";
    var h = Math.floor(m / 60);
    if (h < 48) return h + " h " + (m % 60) + " min";
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }
  function bounded(flag, sign) {
    return function (v, row) {
      return (row[flag] ? sign + " " : "") + number(v);
    };
  }

  // Each table: its columns (key, label, how to show a value), and its filters besides the text box.
  var TABLES = {
    readiness: {
      columns: [
        { key: "flow", label: "Flow" },
        { key: "group", label: "Group" },
        {
          key: "ready",
          label: "Ready",
          show: function (v) { return v ? "ready" : "not ready"; },
          css: function (v) { return v ? "ok" : "problem"; },
        },
        { key: "reason", label: "Reason", wide: true },
        { key: "partitions", label: "Partitions", show: number, num: true },
        { key: "problems", label: "Problems", show: number, num: true },
        { key: "worst_status", label: "Worst status" },
        { key: "replay", label: "Replay", show: bounded("replay_is_bound", "≥"), num: true },
        { key: "skip", label: "Skip", show: bounded("skip_is_bound", "≤"), num: true },
        { key: "checkpoint_age_seconds", label: "Checkpoint age", show: age, num: true },
      ],
      selects: [
        { key: "flow", label: "all flows" },
        { key: "ready", label: "ready or not", options: [[true, "ready"], [false, "not ready"]] },
      ],
    },
    topics: {
      columns: [
        { key: "flow", label: "Flow" },
        { key: "topic", label: "Topic" },
        { key: "partitions", label: "Group partitions", show: number, num: true },
        { key: "groups", label: "Groups", show: number, num: true },
        { key: "problems", label: "Problems", show: number, num: true },
        { key: "worst_status", label: "Worst status" },
        { key: "replay", label: "Replay", show: number, num: true },
        { key: "skip", label: "Skip", show: number, num: true },
      ],
      selects: [{ key: "flow", label: "all flows" }],
    },
    rows: {
      columns: [
        { key: "cluster_pair", label: "Flow" },
        { key: "group", label: "Group" },
        { key: "topic", label: "Topic" },
        { key: "partition", label: "Partition", num: true },
        {
          key: "status",
          label: "Status",
          css: function (v, row) { return row.is_ok ? "ok" : "problem"; },
        },
        { key: "source_offset", label: "Source offset", show: number, num: true },
        { key: "target_offset", label: "Target offset", show: number, num: true },
        { key: "translated_offset", label: "Translated", show: number, num: true },
        { key: "translation_method", label: "Method" },
        { key: "replay", label: "Replay", show: number, num: true },
        { key: "skip", label: "Skip", show: number, num: true },
        { key: "message", label: "Message", wide: true },
      ],
      selects: [
        { key: "cluster_pair", label: "all flows" },
        { key: "status", label: "all statuses" },
        { key: "is_ok", label: "ok or not", options: [[false, "problems"], [true, "ok"]] },
      ],
    },
  };

  // A listing's rows as objects; a text column holds indexes into listing.dictionaries[column].
  function objects(listing) {
    var cols = listing.columns;
    var dicts = cols.map(function (c) { return listing.dictionaries[c] || null; });
    return listing.rows.map(function (values) {
      var row = {};
      for (var i = 0; i < cols.length; i++) row[cols[i]] = dicts[i] ? dicts[i][values[i]] : values[i];
      return row;
    });
  }

  function element(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1; // nothing known sorts last, either way
    if (b === null || b === undefined) return -1;
    if (typeof a === "string") return a.localeCompare(b);
    return a < b ? -1 : 1;
  }

  function buildTable(holder, name, listing) {
    var spec = TABLES[name];
    var rows = objects(listing);
    var view = { text: "", selects: {}, sort: null, desc: false, shown: PAGE };
    var bar = element("div", { class: "filters" });
    var search = element("input", { type: "search", placeholder: "filter", "aria-label": "filter " + name });
    search.dataset.role = "filter";
    bar.appendChild(search);
    spec.selects.forEach(function (sel) {
      var box = element("select", { "aria-label": sel.label });
      box.dataset.key = sel.key;
      box.appendChild(element("option", { value: "" }, sel.label));
      var options = sel.options;
      if (!options) {
        var seen = {};
        rows.forEach(function (r) { seen[r[sel.key]] = true; });
        options = Object.keys(seen).sort().map(function (v) { return [v, v]; });
      }
      options.forEach(function (o) { box.appendChild(element("option", { value: JSON.stringify(o[0]) }, o[1])); });
      box.addEventListener("change", function () {
        view.selects[sel.key] = box.value === "" ? undefined : JSON.parse(box.value);
        view.shown = PAGE;
        draw();
      });
      bar.appendChild(box);
    });
    var count = element("span", { class: "count" });
    bar.appendChild(count);
    holder.appendChild(bar);
    var table = element("table", { class: "rows", id: "table-" + name });
    var head = element("tr");
    spec.columns.forEach(function (col) {
      var th = element("th", { "data-key": col.key, title: "sort" }, col.label);
      th.addEventListener("click", function () {
        view.desc = view.sort === col.key ? !view.desc : !!col.num;
        view.sort = col.key;
        draw();
      });
      head.appendChild(th);
    });
    var thead = element("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = element("tbody");
    table.appendChild(body);
    var scroll = element("div", { class: "scroll" });
    scroll.appendChild(table);
    holder.appendChild(scroll);
    var more = element("button", { type: "button", class: "more" }, "show more");
    more.addEventListener("click", function () { view.shown += PAGE; draw(); });
    holder.appendChild(more);
    search.addEventListener("input", function () {
      view.text = search.value.trim().toLowerCase();
      view.shown = PAGE;
      draw();
    });

    function matches(row) {
      for (var key in view.selects) {
        if (view.selects[key] !== undefined && String(row[key]) !== String(view.selects[key])) return false;
      }
      if (!view.text) return true;
      return spec.columns.some(function (col) {
        var v = row[col.key];
        return v !== null && v !== undefined && String(v).toLowerCase().indexOf(view.text) >= 0;
      });
    }

    function draw() {
      var found = rows.filter(matches);
      if (view.sort) {
        var key = view.sort, sign = view.desc ? -1 : 1;
        found.sort(function (a, b) {
          var c = compare(a[key], b[key]);
          return a[key] === null || b[key] === null ? c : sign * c;
        });
      }
      Array.prototype.forEach.call(head.children, function (th) {
        th.className = th.dataset.key === view.sort ? (view.desc ? "sorted desc" : "sorted asc") : "";
      });
      var fragment = document.createDocumentFragment();
      found.slice(0, view.shown).forEach(function (row) {
        var tr = element("tr");
        spec.columns.forEach(function (col) {
          var v = row[col.key];
          var td = element("td", { "data-key": col.key }, col.show ? col.show(v, row) : v === null ? "—" : String(v));
          var css = [col.num ? "num" : "", col.wide ? "wide" : "", col.css ? col.css(v, row) : ""].join(" ").trim();
          if (css) td.className = css;
          tr.appendChild(td);
        });
        fragment.appendChild(tr);
      });
      body.replaceChildren(fragment);
      var listed = Math.min(found.length, view.shown);
      var of = listing.total > rows.length ? " (" + number(listing.total) + " in the inspection)" : "";
      count.textContent = number(listed) + " of " + number(found.length) + " matching, " + number(rows.length) + " listed" + of;
      more.hidden = found.length <= view.shown;
    }
    draw();
  }

  document.querySelectorAll("[data-table]").forEach(function (holder) {
    var name = holder.dataset.table;
    buildTable(holder, name, DATA.tables[name]);
  });

  state.tablesMs = performance.now();
  var plots = [];
  document.querySelectorAll(".charts[data-flow]").forEach(function (holder) {
    var flow = DATA.flows[Number(holder.dataset.flow)];
    flow.charts.forEach(function (chart) {
      var div = element("div", { class: "chart chart-" + chart.id, id: "chart-" + holder.dataset.flow + "-" + chart.id });
      holder.appendChild(div);
      var config = { displaylogo: false, responsive: true };
      plots.push(window.Plotly.newPlot(div, chart.figure.data, chart.figure.layout, config));
    });
  });
  Promise.all(plots).then(function () {
    state.charts = plots.length;
    state.renderMs = performance.now();
    state.ready = true;
    document.body.dataset.ready = "true";
  });
})();
