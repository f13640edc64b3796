// The live page: subscribe to one publisher (JSON rows) and draw a chart per sensor.
//
// A row is charted when it has a series key (`sensor`, else `key`, else the publisher's name)
// and a number (`avg`, else `value`); a bare number is charted under the publisher's name.
// Demand follows what is drawn: conn.stream() keeps at most `window` elements requested and not
// yet taken by this loop, and the loop takes the next one only after handing the previous one to
// the chart. Beside the charts, the server's own numbers (rstreams/stats, when the server counts):
// per publisher pattern, the rate and the share of the last second its streams waited for demand
// or for the socket. What the page knows is also in window.rsioLive (tests read it).

import { connect } from "./rsio.js";

const POINTS = 120; // points kept per chart
const params = new URLSearchParams(location.search);
const state = {
  status: "loading", error: null, received: 0, rate: 0, outstanding: 0, window: 0, series: {}, server: null,
};
window.rsioLive = state;

const $ = (id) => document.getElementById(id);
const series = new Map(); // key -> {points: [{order, value}], last, note, figure, dirty}

function setStatus(status, error = null) {
  state.status = status;
  state.error = error === null ? null : String(error.message ?? error);
  document.body.dataset.status = status;
  $("status").textContent = error === null ? status : `${status}: ${state.error}`;
}

async function loadConfig() {
  const config = await (await fetch("config.json")).json().catch(() => ({}));
  let url = params.get("url") ?? config.url;
  if (url) { // a server listening on every interface: reach it where this page came from
    const ws = new URL(url);
    if (ws.hostname === "0.0.0.0" || ws.hostname === "[::]") ws.hostname = location.hostname;
    url = ws.href;
  }
  return {
    url,
    publisher: params.get("publisher") ?? config.publisher ?? "results",
    title: params.get("title") ?? config.title ?? "rstreams live",
    window: Number(params.get("window") ?? config.window ?? 64),
  };
}

function rowOf(element, publisher) {
  let row;
  try {
    row = JSON.parse(element);
  } catch {
    return null;
  }
  if (typeof row === "number") return { key: publisher, value: row, note: "", order: state.received };
  if (row === null || typeof row !== "object") return null;
  const value = typeof row.avg === "number" ? row.avg : row.value;
  if (typeof value !== "number") return null;
  const key = String(row.sensor ?? row.key ?? publisher);
  const when = row.window?.start ?? (typeof row.ts === "number" ? new Date(row.ts * 1000).toISOString() : "");
  const note = `${when ? `window ${String(when).slice(11, 19)}` : ""}${row.n !== undefined ? `, n ${row.n}` : ""}`;
  return { key, value, note, order: row.window?.start ?? row.ts ?? state.received };
}

function add(row) {
  let s = series.get(row.key);
  if (s === undefined) {
    s = { points: [], last: 0, note: "", figure: newFigure(row.key), dirty: true };
    series.set(row.key, s);
  }
  // Keep a series in its rows' order (window start, else timestamp, else arrival): a batch may
  // publish windows out of order. Usually this appends.
  state.series[row.key] = (state.series[row.key] ?? 0) + 1;
  let at = s.points.length;
  while (at > 0 && s.points[at - 1].order > row.order) at--;
  if (at === 0 && s.points.length >= POINTS) return; // older than everything kept
  if (at === s.points.length) { // the newest: its value and note are shown
    s.last = row.value;
    s.note = row.note;
  }
  s.points.splice(at, 0, { order: row.order, value: row.value });
  if (s.points.length > POINTS) s.points.shift();
  s.dirty = true;
}

function newFigure(key) {
  const figure = document.createElement("figure");
  figure.dataset.sensor = key;
  figure.innerHTML = `<figcaption><span class="name"></span><span class="value"></span></figcaption>
    <svg viewBox="0 0 ${POINTS - 1} 100" preserveAspectRatio="none"><polyline points=""/></svg>
    <div class="note"></div>`;
  figure.querySelector(".name").textContent = key;
  const charts = $("charts");
  const after = [...charts.children].find((f) => f.dataset.sensor.localeCompare(key, undefined, { numeric: true }) > 0);
  charts.insertBefore(figure, after ?? null);
  return figure;
}

function draw() {
  for (const s of series.values()) {
    if (!s.dirty) continue;
    s.dirty = false;
    const values = s.points.map((p) => p.value);
    const low = Math.min(...values);
    const high = Math.max(...values);
    const span = high - low || 1;
    const offset = POINTS - values.length;
    const points = values.map((v, i) => `${offset + i},${(95 - ((v - low) / span) * 90).toFixed(2)}`);
    s.figure.querySelector("polyline").setAttribute("points", points.join(" "));
    s.figure.querySelector(".value").textContent = s.last.toFixed(3);
    s.figure.querySelector(".note").textContent = `${s.note} · ${s.points.length} points, ${low.toFixed(2)}–${high.toFixed(2)}`;
    s.figure.dataset.points = String(s.points.length);
    s.figure.dataset.last = String(s.last);
  }
}

function showStats(subscription, times) {
  const now = performance.now();
  while (times.length && now - times[0] > 2000) times.shift();
  state.rate = times.length / 2;
  state.outstanding = subscription === null ? 0 : Number(subscription.outstanding);
  $("received").textContent = state.received.toLocaleString("en");
  $("rate").textContent = state.rate.toLocaleString("en", { maximumFractionDigits: 1 });
  $("outstanding").textContent = String(state.outstanding);
  document.body.dataset.received = String(state.received);
  draw();
}

function percent(part, whole) {
  return whole > 0 ? `${Math.min(100, (100 * part) / whole).toFixed(0)}%` : "–";
}

function cells(row, values) {
  for (const value of values) {
    const cell = document.createElement("td");
    cell.textContent = String(value);
    row.append(cell);
  }
}

function showServer(snapshot, previous) {
  const span = previous === null ? 0 : snapshot.uptime_seconds - previous.uptime_seconds;
  const publishers = {};
  const body = $("server-publishers");
  body.replaceChildren();
  for (const [pattern, p] of Object.entries(snapshot.publishers)) {
    if (pattern.startsWith("rstreams/")) continue; // the server's own (this page's stats among them)
    const before = previous?.publishers?.[pattern];
    const open = p.subscriptions_open;
    const rate = before && span > 0 ? (p.elements_sent - before.elements_sent) / span : 0;
    const onDemand = before ? p.stalled_demand_seconds - before.stalled_demand_seconds : 0;
    const onSocket = before ? p.stalled_socket_seconds - before.stalled_socket_seconds : 0;
    publishers[pattern] = { open, rate, demand: p.demand_outstanding, onDemand, onSocket };
    const row = document.createElement("tr");
    row.dataset.publisher = pattern;
    const demand = p.demand_outstanding >= 2 ** 63 - 1 ? "unbounded" : p.demand_outstanding;
    cells(row, [pattern, open, rate.toFixed(1), demand, percent(onDemand, span * open), percent(onSocket, span * open)]);
    body.append(row);
  }
  const logs = $("server-logs");
  logs.replaceChildren();
  for (const [name, log] of Object.entries(snapshot.replay?.logs ?? {})) {
    const readers = Object.entries(log.readers);
    for (const [reader, at] of readers.length ? readers : [["–", { position: "–", lag: "–" }]]) {
      const row = document.createElement("tr");
      cells(row, [name, log.elements, log.end, reader || "(unnamed)", at.position, at.lag]);
      logs.append(row);
    }
  }
  $("server-logs-table").hidden = logs.children.length === 0;
  $("server-summary").textContent =
    `· ${snapshot.connections_open} connection(s), up ${snapshot.uptime_seconds.toFixed(0)} s`;
  $("server").hidden = false;
  state.server = { connections: snapshot.connections_open, publishers };
}

async function watchServer(conn) {
  // The server's numbers, once a second; a server that counts nothing (or refuses) just has none.
  let previous = null;
  try {
    for await (const text of conn.stream("rstreams/stats?interval=1", { window: 2, decode: "text" })) {
      const snapshot = JSON.parse(text);
      showServer(snapshot, previous);
      previous = snapshot;
    }
  } catch (error) {
    state.server = { error: String(error.message ?? error) };
    $("server").hidden = true;
  }
}

async function main() {
  const config = await loadConfig();
  document.title = $("title").textContent = config.title;
  $("publisher").textContent = config.publisher;
  $("window").textContent = String(config.window);
  $("url").textContent = config.url ?? "–";
  state.window = config.window;
  if (!config.url) throw new Error("no RS.io URL: config.json has none and the page's address has no ?url=");
  setStatus("connecting");
  const conn = await connect(config.url);
  state.connection = conn;
  const times = []; // arrival times of the last 2 s, for the rate
  const stream = conn.stream(config.publisher, { window: config.window, decode: "text" });
  const iterator = stream[Symbol.asyncIterator]();
  const timer = setInterval(() => showStats(iterator.subscription, times), 250);
  watchServer(conn);
  setStatus("live");
  try {
    for (;;) {
      const { done, value } = await iterator.next();
      if (done) break;
      state.received += 1;
      times.push(performance.now());
      const row = rowOf(value, config.publisher);
      if (row !== null) add(row);
    }
    setStatus("complete");
  } finally {
    clearInterval(timer);
    showStats(null, times);
  }
}

main().catch((error) => {
  console.error(error);
  setStatus(state.status === "live" ? "closed" : "error", error);
});
