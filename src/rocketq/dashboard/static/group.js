// The consumer-group page: renders the group's live state and polls /api/groups/<group> every
// second, updating the ownership map, members, timeline, changes and lag without reloading.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const stateEl = document.getElementById("state");
let state = JSON.parse(stateEl.textContent);
const apiUrl = "/api/groups/" + encodeURIComponent(state.group);
let previousOwners = {};

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "style") node.style.cssText = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(n) {
  if (n === null || n === undefined) return "-";
  if (typeof n === "number" && !Number.isInteger(n)) return n.toFixed(1);
  return Number(n).toLocaleString("en-US");
}

function clock(ms) {
  const d = new Date(ms);
  return d.toTimeString().slice(0, 8);
}

function shortId(cid) {
  // "127.0.0.1@consumer-01" -> "consumer-01"; ids are long, cells are small
  const at = cid.lastIndexOf("@");
  return at >= 0 ? cid.slice(at + 1) : cid;
}

function colourOf(cid) {
  const m = state.members.find((x) => x.client_id === cid);
  return (m && m.colour) || "#8a93a6";
}

function renderSummary() {
  const subs = Object.entries(state.subscriptions).map(([t, e]) => `${t} [${e}]`).join(", ");
  const age = state.polled_ms ? Math.max(0, Math.round((Date.now() - state.polled_ms) / 1000)) : null;
  const parts = [state.message_model, state.consume_type].filter(Boolean);
  if (subs) parts.push("subscribes " + subs);
  if (age !== null) parts.push(`polled ${age} s ago`);
  document.getElementById("summary").textContent = parts.join(" · ");
  document.getElementById("k-members").textContent = state.members.length;
  document.getElementById("k-queues").textContent = state.queues.length;
  document.getElementById("k-lag").textContent = fmt(state.total_lag);
  document.getElementById("k-tps").textContent = fmt(state.consume_tps);
  document.getElementById("k-rebalances").textContent = state.rebalances;
  document.getElementById("k-moved").textContent = state.queues_moved;
  const dup = document.getElementById("duplicates");
  if (state.duplicates.length) {
    dup.hidden = false;
    dup.textContent = "DUPLICATE CLIENT ID: " + state.duplicates
      .map((d) => `${d.client_id} is registered by ${d.addresses.length} connections (${d.addresses.join(", ")})`)
      .join("; ") + " - they consume the same queues, and the queues of the id they should have had are read by nobody.";
  } else {
    dup.hidden = true;
  }
  let banner = document.getElementById("poll-banner");
  if (state.error) {
    if (!banner) {
      banner = el("div", { class: "banner error", role: "alert", id: "poll-banner" });
      document.querySelector("main").prepend(banner);
    }
    banner.textContent = state.error + " (showing what was seen last; still trying)";
  } else if (banner) {
    banner.remove();
  }
}

function renderOwnership() {
  const legend = document.getElementById("legend");
  legend.replaceChildren(...state.members.map((m) =>
    el("span", { class: "swatch", style: `--c: ${m.colour}` },
       `${m.client_id} · ${m.queue_count}${m.duplicate ? " · DUPLICATE" : ""}`)));
  const grid = document.getElementById("ownership");
  const topics = [...new Set(state.queues.map((q) => q.topic))];
  const blocks = topics.map((topic) => {
    const cells = state.queues.filter((q) => q.topic === topic).map((q) => {
      const owner = q.owners[0];
      const classes = ["cell"];
      if (!owner) classes.push("nobody");
      if (q.owner_count > 1) classes.push("shared");
      const ownerKey = q.owners.join(",");
      if (previousOwners[q.key] !== undefined && previousOwners[q.key] !== ownerKey) classes.push("changed");
      const label = owner ? shortId(owner) + (q.owner_count > 1 ? ` ×${q.owner_count}` : "") : "nobody";
      const cell = el("div", {
        class: classes.join(" "),
        style: `--c: ${q.colour || "#d5d9e0"}`,
        title: `${q.key}: ${q.owners.join(", ") || "nobody"}; lag ${fmt(q.lag)}`,
        "data-queue": q.key,
        "data-owner": owner || "",
        "data-owners": q.owner_count,
      });
      cell.append(el("b", {}, q.key.split("@")[1]), el("span", {}, label));
      return cell;
    });
    const block = el("div", { class: "topic-block" });
    const cellsBox = el("div", { class: "ownership-grid" });
    cellsBox.append(...cells);
    block.append(el("h3", {}, topic), cellsBox);
    return block;
  });
  grid.replaceChildren(...blocks);
  previousOwners = Object.fromEntries(state.queues.map((q) => [q.key, q.owners.join(",")]));
}

function renderMembers() {
  const body = document.querySelector("#members tbody");
  if (!state.members.length) {
    body.replaceChildren(el("tr", {}, null));
    body.firstChild.append(el("td", { colspan: 7, class: "muted" }, "no member online"));
    return;
  }
  body.replaceChildren(...state.members.map((m) => {
    const row = el("tr", { "data-client": m.client_id });
    const id = el("td", {});
    const link = el("a", { href: `/groups/${encodeURIComponent(state.group)}/clients/${encodeURIComponent(m.client_id)}`,
                           title: "its own report: subscriptions, queues, rates, properties" });
    link.append(el("span", { class: "swatch", style: `--c: ${m.colour}` }, m.client_id));
    id.append(link);
    if (m.duplicate) id.append(el("span", { class: "dup" }, " DUPLICATE"));
    row.append(id, el("td", {}, m.addresses.join(" ")), el("td", {}, m.language), el("td", {}, m.version),
      el("td", {}, m.strategy), el("td", { class: "n" }, m.queue_count),
      el("td", { title: m.error || "" }, m.queues_source === "plan" ? "computed (did not answer)" : "its own report"));
    return row;
  }));
}

function renderTimeline() {
  const box = document.getElementById("timeline");
  const keys = state.queues.map((q) => q.key);
  const manyTopics = new Set(state.queues.map((q) => q.topic)).size > 1;
  const rowH = keys.length > 64 ? 6 : 14;
  const left = manyTopics ? 200 : 110, right = 12, top = 18;
  const labelOf = (key) => {
    const [topic, queue] = [key.slice(0, key.lastIndexOf("@")), key.slice(key.lastIndexOf("@") + 1)];
    if (!manyTopics) return queue;
    const t = topic.length > 16 ? topic.slice(0, 15) + "…" : topic;
    return `${t} ${queue}`;
  };
  const width = Math.max(box.clientWidth - 14, 500);
  const height = top + keys.length * rowH + 22;
  const end = state.now_ms;
  const firstSeen = Math.min(end, ...Object.values(state.stretches).flat().map((s) => s.from_ms));
  // from the first observation (at least 10 s back), at most the history kept
  const start = Math.max(end - state.history_ms, Math.min(firstSeen, end - 10000));
  document.getElementById("window").textContent = `${Math.round((end - start) / 1000)} s`;
  const x = (ms) => left + ((ms - start) / (end - start)) * (width - left - right);
  const chart = svg("svg", { width, height, role: "img", "aria-label": "ownership timeline" });
  keys.forEach((key, i) => {
    const y = top + i * rowH;
    if (rowH >= 10) chart.append(svg("text", { x: 4, y: y + rowH - 3 }, labelOf(key)));
    for (const s of state.stretches[key] || []) {
      const x0 = x(Math.max(s.from_ms, start));
      const x1 = x(s.to_ms === null ? end : s.to_ms);
      const bar = svg("rect", { x: x0, y: y + 1, width: Math.max(x1 - x0, 1), height: rowH - 2, fill: s.colour, rx: 2 });
      bar.append(svg("title", {}, `${key}: ${s.owner} ${clock(s.from_ms)} - ${s.to_ms === null ? "now" : clock(s.to_ms)}`));
      chart.append(bar);
    }
  });
  for (const c of state.changes) {
    if (c.at_ms < start) continue;
    const cx = x(c.at_ms);
    chart.append(svg("line", { x1: cx, x2: cx, y1: top - 6, y2: height - 18, stroke: "#1d2330", "stroke-dasharray": "3 3" }));
    const nearEnd = cx > width - 90;
    chart.append(svg("text", { x: nearEnd ? cx - 3 : cx + 3, y: top - 6, "text-anchor": nearEnd ? "end" : "start" }, c.label));
  }
  chart.append(svg("text", { x: left, y: height - 4 }, clock(start)));
  chart.append(svg("text", { x: width - right - 60, y: height - 4 }, clock(end)));
  box.replaceChildren(chart);
}

function ranges(ids) {
  // [0,1,2,5] -> "0-2,5"
  const sorted = [...ids].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    out.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j;
  }
  return out.join(",");
}

function compactMoves(moves) {
  // "consumer-1 → consumer-2: broker-a:8-13" per (from, to, topic, broker)
  const groups = new Map();
  for (const m of moves) {
    const at = m.queue.lastIndexOf("@");
    const [broker, id] = m.queue.slice(at + 1).split(/:(?=\d+$)/);
    const topic = m.queue.slice(0, at);
    const key = `${shortId(m.from)} → ${shortId(m.to)}: ${topic.startsWith("%") ? topic + " " : ""}${broker}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(Number(id));
  }
  return [...groups.entries()].map(([key, ids]) => `${key}:${ranges(ids)}`).join("; ");
}

function renderChanges() {
  const body = document.querySelector("#changes tbody");
  document.getElementById("traced").textContent = state.traced
    ? "with the consumers' own rebalance records (tracing is on)"
    : "as seen by polling (start consumers with trace=True for each rebalance's own record)";
  if (!state.changes.length) {
    body.replaceChildren(el("tr", {}));
    body.firstChild.append(el("td", { colspan: 6, class: "muted" }, "no change since the dashboard started watching"));
    return;
  }
  body.replaceChildren(...state.changes.map((c) => {
    const moves = compactMoves(c.moves);
    const row = el("tr", {});
    const who = [...c.joined.map((x) => "+" + shortId(x)), ...c.left.map((x) => "−" + shortId(x))].join(" ");
    const what = [c.label, who, c.triggers.length ? `(${c.triggers.join(", ")})` : ""].filter(Boolean).join(" ");
    row.append(el("td", {}, clock(c.at_ms)), el("td", {}, what),
      el("td", { class: "n" }, c.moves.length), el("td", {}, moves || "-"),
      el("td", { class: "n" }, `${fmt(c.lag_before)} → ${fmt(c.peak_lag_after)}`),
      el("td", { class: "n" }, c.rebalance_ms === null ? "-" : `${c.rebalance_ms} ms`));
    return row;
  }));
}

function spark(values, colour) {
  const w = 120, h = 20;
  const s = svg("svg", { class: "spark", width: w, height: h });
  if (values.length < 2) return s;
  const max = Math.max(1, ...values);
  const pts = values.map((v, i) => `${(i / (values.length - 1)) * (w - 2) + 1},${h - 2 - (v / max) * (h - 4)}`);
  s.append(svg("polyline", { points: pts.join(" "), fill: "none", stroke: colour || "#3565c9", "stroke-width": 1.5 }));
  return s;
}

function renderLag() {
  const box = document.getElementById("lagchart");
  const pts = state.lag;
  const width = Math.max(box.clientWidth - 14, 500), height = 140, left = 60, bottom = 18;
  const chart = svg("svg", { width, height, role: "img", "aria-label": "total lag over time" });
  if (pts.length >= 2) {
    const t0 = pts[0].at_ms, t1 = pts[pts.length - 1].at_ms;
    const max = Math.max(1, ...pts.map((p) => p.total));
    const x = (ms) => left + ((ms - t0) / Math.max(t1 - t0, 1)) * (width - left - 8);
    const y = (v) => 6 + (1 - v / max) * (height - bottom - 10);
    chart.append(svg("line", { x1: left, x2: width - 8, y1: y(0), y2: y(0), stroke: "#dfe3ea" }));
    chart.append(svg("text", { x: 4, y: y(max) + 4 }, fmt(max)));
    chart.append(svg("text", { x: 4, y: y(0) }, "0"));
    chart.append(svg("polyline", {
      points: pts.map((p) => `${x(p.at_ms)},${y(p.total)}`).join(" "), fill: "none", stroke: "#3565c9", "stroke-width": 2,
    }));
    for (const c of state.changes) {
      if (c.at_ms < t0) continue;
      chart.append(svg("line", { x1: x(c.at_ms), x2: x(c.at_ms), y1: 4, y2: height - bottom, stroke: "#1d2330", "stroke-dasharray": "3 3" }));
    }
    chart.append(svg("text", { x: left, y: height - 4 }, clock(t0)));
    chart.append(svg("text", { x: width - 68, y: height - 4 }, clock(t1)));
  } else {
    chart.append(svg("text", { x: 10, y: 20 }, "collecting… (one point per poll)"));
  }
  box.replaceChildren(chart);
  const body = document.querySelector("#queues tbody");
  body.replaceChildren(...state.queues.map((q) => {
    const row = el("tr", { "data-queue": q.key });
    const owner = el("td", {});
    if (q.owners.length) {
      q.owners.forEach((o) => owner.append(el("span", { class: "swatch", style: `--c: ${colourOf(o)}` }, o)));
      if (q.owner_count > 1) owner.append(el("span", { class: "dup" }, ` ×${q.owner_count}`));
    } else {
      owner.textContent = "nobody";
    }
    const sparkCell = el("td", {});
    sparkCell.append(spark(q.lag_history, q.colour));
    row.append(el("td", {}, q.key), owner, el("td", { class: "n" }, fmt(q.broker_offset)),
      el("td", { class: "n" }, fmt(q.consumer_offset)), el("td", { class: "n" }, fmt(q.lag)), sparkCell);
    return row;
  }));
}

function render() {
  renderSummary();
  renderOwnership();
  renderMembers();
  renderTimeline();
  renderChanges();
  renderLag();
  renderLive();
}

async function poll() {
  const live = document.getElementById("live");
  try {
    const answer = await fetch(apiUrl, { cache: "no-store" });
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
    state = await answer.json();
    render();
  } catch (err) {
    live.className = "live stale";
    live.textContent = "dashboard unreachable";
    live.title = String(err);
  }
  setTimeout(poll, 1000);
}

function renderLive() {
  // green only while the cluster answers: a failed or an old poll says so (what did not answer)
  const live = document.getElementById("live");
  const age = state.polled_ms ? (Date.now() - state.polled_ms) / 1000 : null;
  if (state.error) {
    live.className = "live stale";
    live.textContent = "no answer";
    live.title = state.error;
  } else if (age === null || age > 5) {
    live.className = "live slow";
    live.textContent = age === null ? "not polled yet" : `last answer ${Math.round(age)} s ago`;
    live.title = "the cluster has not answered the last polls";
  } else {
    live.className = "live";
    live.textContent = "live";
    live.title = "updated every second without reloading";
  }
}

document.getElementById("reset").addEventListener("submit", (event) => {
  const form = event.target;
  const text = `Reset the offsets of group ${state.group} on topic ${form.topic.value} to ${form.to.value}?`;
  if (!window.confirm(text)) event.preventDefault();
});

render();
setTimeout(poll, 1000);
