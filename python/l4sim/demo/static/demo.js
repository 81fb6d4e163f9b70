// The demo page: builds the controls from the server's "hello", sends every change over the
// WebSocket, and draws each "frame" (about once a second) with plotly.js.
"use strict";

const COLORS = { A: "#1565c0", B: "#c62828" };
const FCT_KEEP = 2000;  // completion-time points kept per client on the page
// completion-time points kept per client: web transfers (fct) and app-limited frames (stream),
// since the client's or the link's settings last changed (fctKey: those settings; fctClears: how
// often they changed)
const demo = (window.l4simDemo = {
  last: null, frames: 0, hello: null, fct: { A: [], B: [] }, stream: { A: [], B: [] },
  fctKey: { A: null, B: null }, fctClears: { A: 0, B: 0 }, restarts: 0,
});
// 1-2-5 steps from 1 ms to 100 s, for the completion-time axis.
const FCT_TICKS = [-3, -2, -1, 0, 1, 2].flatMap((e) => [1, 2, 5].map((m) => +(m * 10 ** e).toPrecision(1)));
// flow names under the bars: the margin grows to hold them when many bars slant them
const BAR_AXIS = { automargin: true };
const LAYOUT = { margin: { l: 55, r: 15, t: 35, b: 45 }, font: { size: 12 }, legend: { x: 0.01, y: 0.99, bgcolor: "rgba(255,255,255,0.7)" } };
const CONFIG = { displayModeBar: false, responsive: true };
let ws;

function send(msg) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
}

let noticeTimer;
function notice(text, level) {
  const el = document.getElementById("notice");
  el.textContent = text;
  el.className = level || "";
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { el.textContent = ""; el.className = ""; }, 8000);
}

function options(select, choices) {
  select.replaceChildren(...Object.entries(choices).map(([value, label]) => new Option(label, value)));
}

function buildControls(hello) {
  for (const c of hello.clients) {
    const box = document.getElementById(`client-${c}`);
    box.replaceChildren(document.getElementById("client-template").content.cloneNode(true));
    box.querySelector(".name").textContent = c;
    for (const el of box.querySelectorAll("[data-field]")) el.dataset.key = `${c}.${el.dataset.field}`;
    options(box.querySelector("[data-field=cc]"), hello.ccs);
    options(box.querySelector("[data-field=web]"), Object.fromEntries(hello.web_rates.map((r) => [r, r])));
    options(box.querySelector("[data-field=al]"), Object.fromEntries(hello.al_rates.map((r) => [r, r || "off"])));
  }
  options(document.querySelector("[data-key='link.aqm']"), hello.aqms);
  for (const el of document.querySelectorAll("[data-key]")) {
    const [, name] = el.dataset.key.split(".");
    if (hello.ranges[name]) [el.min, el.max] = hello.ranges[name];
    if (el.type === "range") el.addEventListener("input", () => { el.nextElementSibling.value = el.value; });
    el.addEventListener("change", () => send({ type: "set", key: el.dataset.key, value: el.value }));
  }
  const presets = document.getElementById("presets");
  presets.replaceChildren(...Object.entries(hello.presets).map(([name, label]) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.dataset.preset = name;
    b.onclick = () => send({ type: "preset", name });
    return b;
  }));
  const speed = document.getElementById("speed");
  speed.replaceChildren(...hello.speeds.map((s) => {
    const b = document.createElement("button");
    b.textContent = s;
    b.dataset.speed = s;
    b.onclick = () => { send({ type: "speed", value: s }); showSpeed(s); };
    return b;
  }));
  const restart = document.createElement("button");
  restart.textContent = "restart";
  restart.id = "restart";
  restart.title = "a new simulation from t = 0 with these settings";
  restart.onclick = () => send({ type: "restart" });
  speed.append(restart);
  showSpeed("1x");
  showSettings(hello.settings);
}

function showSpeed(s) {
  for (const b of document.querySelectorAll("[data-speed]")) b.classList.toggle("active", b.dataset.speed === s);
  document.getElementById("status").textContent = s === "pause" ? "paused" : "running";
}

function showSettings(settings) {
  for (const el of document.querySelectorAll("[data-key]")) {
    const [group, name] = el.dataset.key.split(".");
    if (document.activeElement === el && el.type !== "select-one") continue;  // being edited
    el.value = settings[group][name];
    if (el.type === "range") el.nextElementSibling.value = el.value;
  }
}

function ccLabel(frame, c) {
  return demo.hello.ccs[frame.settings[c].cc];
}

function draw(frame) {
  const flows = frame.flows;
  const KINDS = { bulk: "long", web: "web", messages: "app-limited", udp: "CBR" };
  // a stream's label says the rate it asks for: below it, the network (not the application)
  // limits the stream, and its frames queue up behind each other
  const asks = { messages: "al", udp: "cbr" };
  const label = (f) => {
    const rate = asks[f.kind] ? `, asks ${frame.settings[f.client][asks[f.kind]]}` : "";
    return `${f.name} (${KINDS[f.kind] || f.kind}${rate})`;
  };
  Plotly.react("plot-rate", [{
    type: "bar", x: flows.map(label), y: flows.map((f) => f.tput_mbps),
    marker: { color: flows.map((f) => COLORS[f.client]) },
  }], { ...LAYOUT, title: { text: "Throughput per flow, Mbit/s" }, xaxis: BAR_AXIS, yaxis: { rangemode: "tozero" } }, CONFIG);

  const long = flows.filter((f) => f.cwnd !== null);
  Plotly.react("plot-window", [{
    type: "bar", x: long.map(label), y: long.map((f) => f.cwnd),
    marker: { color: long.map((f) => COLORS[f.client]) },
  }], {
    ...LAYOUT, title: { text: "Congestion window per flow, packets" }, xaxis: BAR_AXIS, yaxis: { rangemode: "tozero" },
  }, CONFIG);

  const levels = Array.from({ length: 101 }, (_, i) => i);
  const delayTraces = [];
  for (const c of demo.hello.clients) {
    const d = frame.delay[c];
    if (!d) continue;
    delayTraces.push({
      x: d.cdf_ms, y: levels, mode: "lines", line: { color: COLORS[c], width: 2.5 },
      name: `${c} (${ccLabel(frame, c)}): mean ${d.mean_ms.toFixed(2)} ms, P99 ${d.p99_ms.toFixed(2)} ms`,
    });
  }
  Plotly.react("plot-delay", delayTraces, {
    ...LAYOUT, title: { text: "Queue delay per client, CDF of the last second" },
    xaxis: { title: { text: "queue delay, ms" }, rangemode: "tozero" }, yaxis: { title: { text: "%" }, range: [0, 100] },
    showlegend: true, legend: { ...LAYOUT.legend, x: 0.99, xanchor: "right", y: 0.02, yanchor: "bottom" },
  }, CONFIG);

  const h = frame.history;
  const ts = h.map((p) => p.t);
  const pct = (k) => h.map((p) => (p[k] === null ? null : 100 * p[k]));
  const probs = [
    ["l4s_mark", "L4S mark", "solid", COLORS.A], ["l4s_drop", "L4S drop", "dot", COLORS.A],
    ["classic_mark", "Classic mark", "solid", COLORS.B], ["classic_drop", "Classic drop", "dot", COLORS.B],
  ];
  Plotly.react("plot-prob", probs.map(([k, name, dash, color]) => ({
    x: ts, y: pct(k), name, mode: "lines", line: { dash, color }, connectgaps: false,
  })), {
    ...LAYOUT, title: { text: "Mark and drop probability per class, %, last 60 s" }, margin: { ...LAYOUT.margin, b: 60 },
    xaxis: { title: { text: "" } }, yaxis: { rangemode: "tozero" },
    showlegend: true, legend: { orientation: "h", x: 0.5, xanchor: "center", y: -0.12, yanchor: "top" },
  }, CONFIG);

  const last = h.length ? h[h.length - 1].util : null;
  Plotly.react("plot-util", [{ x: ts, y: pct("util"), mode: "lines", fill: "tozeroy", line: { color: "#455a64" } }], {
    ...LAYOUT, title: { text: `Link utilisation, last 60 s${last === null ? "" : `: ${(100 * last).toFixed(1)} %`}` },
    xaxis: { title: { text: "simulated time, s" } }, yaxis: { title: { text: "%" }, range: [0, 105] },
  }, CONFIG);

  for (const c of demo.hello.clients) {
    // points from before a change of the AQM, the link or the client's traffic describe another
    // experiment: start the client's scatter afresh
    const key = JSON.stringify([frame.settings.link, frame.settings[c]]);
    if (demo.fctKey[c] !== null && key !== demo.fctKey[c]) {
      demo.fct[c].length = 0;
      demo.stream[c].length = 0;
      demo.fctClears[c] += 1;
    }
    demo.fctKey[c] = key;
    for (const [kept, fresh] of [[demo.fct[c], frame.fct[c]], [demo.stream[c], frame.stream[c]]]) {
      kept.push(...fresh);
      if (kept.length > FCT_KEEP) kept.splice(0, kept.length - FCT_KEEP);
    }
  }
  drawFct(frame);
}

function drawFct(frame) {
  const col = document.getElementById("fct-handshake").checked ? 1 : 2;
  const web = demo.hello.clients.map((c) => ({
    x: demo.fct[c].map((p) => p[0]), y: demo.fct[c].map((p) => p[col]), mode: "markers", type: "scatter",
    name: `${c} (${ccLabel(frame, c)})`, marker: { color: COLORS[c], size: 4, opacity: 0.6 },
  }));
  // the app-limited stream's frames, all of one size: a column of their delivery times
  const stream = demo.hello.clients.filter((c) => demo.stream[c].length).map((c) => ({
    x: demo.stream[c].map((p) => p[0]), y: demo.stream[c].map((p) => p[col]), mode: "markers", type: "scatter",
    name: `${c} app-limited frames`, marker: { color: COLORS[c], size: 6, opacity: 0.6, symbol: "diamond-open" },
  }));
  Plotly.react("plot-fct", [...web, ...stream], {
    ...LAYOUT, title: { text: "Completion time vs size, since the last change" },
    // Whole numbers on the ticks: Plotly's default log ticks label 2 and 5 by their digit
    // alone, so 0.05 s and 5 s read the same.
    xaxis: { type: "log", dtick: 1, title: { text: "size, bytes" } },
    yaxis: { type: "log", tickvals: FCT_TICKS, title: { text: "completion time, s" } },
    showlegend: true,
  }, CONFIG);
}

function onMessage(ev) {
  const msg = JSON.parse(ev.data);
  if (msg.type === "hello") {
    demo.hello = msg;
    buildControls(msg);
    document.getElementById("status").textContent = "running";
  } else if (msg.type === "settings") {
    showSettings(msg.settings);
  } else if (msg.type === "notice") {
    notice(msg.text, msg.level);
  } else if (msg.type === "frame") {
    if (demo.last && msg.t < demo.last.t) {
      // a new simulation (restart): the completion times kept here are the old one's
      demo.restarts += 1;
      for (const c of demo.hello.clients) {
        demo.fct[c].length = 0;
        demo.stream[c].length = 0;
      }
    }
    demo.last = msg;
    demo.frames += 1;
    document.getElementById("clock").textContent = `t = ${msg.t.toFixed(0)} s`;
    showSettings(msg.settings);
    try {
      draw(msg);
    } finally {
      send({ type: "ack" });
    }
  }
}

function connect() {
  ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  ws.onmessage = onMessage;
  ws.onclose = () => {
    document.getElementById("status").textContent = "disconnected";
    notice("Connection to the simulation lost (server stopped?): reload the page to start a new one.", "error");
  };
}

document.getElementById("fct-handshake").addEventListener("change", () => demo.last && drawFct(demo.last));
connect();
