// Tandem console: the one /v1/stream?rows=keys that every open page of the
// console shares (a SharedWorker, started by console.js). A browser keeps
// about six connections to a site: a stream per page would leave the
// seventh page waiting to load. Each page gets every message and says what
// it makes of it; a page that connects while the stream is open is told so
// (it then checks the head itself); a stream that was closed (signed out)
// is opened again by the next page that connects.
"use strict";

const ports = new Set();
let stream = null;

function tell(message) {
  ports.forEach(function (port) { port.postMessage(message); });
}

function start() {
  stream = new EventSource("/v1/stream?rows=keys");
  stream.addEventListener("open", function () { tell({ kind: "open" }); });
  stream.addEventListener("change", function (event) { tell({ kind: "change", data: event.data }); });
  stream.addEventListener("reset", function (event) { tell({ kind: "reset", data: event.data }); });
  stream.addEventListener("error", function () { tell({ kind: "error", closed: stream.readyState === EventSource.CLOSED }); });
}

self.addEventListener("connect", function (event) {
  const port = event.ports[0];
  ports.add(port);
  port.addEventListener("message", function (message) { if (message.data === "bye") ports.delete(port); });
  port.start();
  if (stream === null || stream.readyState === EventSource.CLOSED) start();
  else if (stream.readyState === EventSource.OPEN) port.postMessage({ kind: "open" });
  else port.postMessage({ kind: "error", closed: false });
});
