// Tandem console: live pages. Every page is complete without this script.
//
// With it, a page follows /v1/stream?rows=keys (the session cookie
// authenticates it; one stream for all the console's pages, held by
// static/console-stream.js). Each [data-region] says in data-views what it shows:
// view names, `clock` (ages by the engine's clock), `log` (the inputs or the
// events themselves); and in data-rows (JSON, {view: [key, ...]}) the rows
// it shows of a view when it shows only those. A commit that touches what a
// region shows fetches the page again and patches every region in place:
// the nodes that did not change are kept, so the focus, a text selection,
// the scroll position, an open <details> and what a person typed survive. A
// commit that touches nothing shown moves the footer's position and clock
// on. The footer says `live` while the page shows the head the stream
// announced; `behind: head H` once it has been behind that head for
// graceMs (its fetch is slow or failed); `behind: reconnecting…` while the
// stream is down. On each (re)connect, /v1/health's position says whether
// commits were made that no message announced (before the stream opened).
"use strict";

(function () {
  const graceMs = 1000;
  const signedOut = "signed out or failing: reload the page";
  const state = document.querySelector(".live-state");
  let head = 0; // the newest position announced
  let latest = null; // the newest message past the page, when its fetch did not include it
  let inFlight = false;
  let again = false;
  let streamProblem = "connecting…";
  let fetchProblem = null;
  let grace = null;

  function clockRegion() {
    return document.querySelector('[data-region="clock"]');
  }

  function shown() {
    const region = clockRegion();
    return region ? Number(region.getAttribute("data-position")) : 0;
  }

  function shownClock() {
    const region = clockRegion();
    return region ? region.getAttribute("data-clock") : "";
  }

  function say(word, detail) {
    if (!state) return;
    state.textContent = detail ? word + ": " + detail : word;
    state.setAttribute("data-state", word);
  }

  function judge() {
    // The footer's word, from what is known now.
    head = Math.max(head, shown());
    const problem = streamProblem || fetchProblem;
    if (problem) { say("behind", problem); return; }
    if (shown() >= head) {
      clearTimeout(grace);
      grace = null;
      say("live");
      return;
    }
    if (state && state.getAttribute("data-state") === "behind") { say("behind", "head " + head); return; }
    if (grace === null) {
      grace = setTimeout(function () { grace = null; if (shown() < head) say("behind", "head " + head); }, graceMs);
    }
  }

  // ------------------------------------------------------------ what changed

  function clockOf(message) {
    const inputs = message.inputs || [];
    return inputs.length ? inputs[inputs.length - 1].at : null;
  }

  function follows(region) {
    return (region.getAttribute("data-views") || "").split(/[\s,]+/).filter(Boolean);
  }

  function rowsOf(region) {
    const text = region.getAttribute("data-rows");
    return text ? JSON.parse(text) : {};
  }

  function changed(change, keys) {
    // Whether a view's change touches the rows a region shows of it: the
    // keys of the rows it changed (?rows=keys); a change that names no key
    // (a whole list, a value) touches every row.
    if (!keys || !change || !Array.isArray(change.touched)) return true;
    return change.touched.some(function (key) { return keys.indexOf(key) >= 0; });
  }

  function touches(region, message) {
    const names = follows(region);
    if (names.indexOf("log") >= 0) return true;
    const clock = clockOf(message);
    if (names.indexOf("clock") >= 0 && clock && clock !== shownClock()) return true;
    const rows = rowsOf(region);
    return (message.views || []).some(function (view) {
      return names.indexOf(view) >= 0 && changed(message.keys ? message.keys[view] : null, rows[view]);
    });
  }

  function advance(message) {
    // Nothing the page shows changed up to `message`: it is at its position.
    const region = clockRegion();
    if (!region) return;
    const clock = clockOf(message) || region.getAttribute("data-clock");
    region.setAttribute("data-position", String(message.position));
    region.setAttribute("data-clock", clock);
    const position = region.querySelector(".position");
    if (position) position.textContent = String(message.position);
    const time = region.querySelector(".clock");
    if (time && clock) time.textContent = clock;
  }

  // ---------------------------------------------------------------- patching

  function attributes(current, fresh) {
    const kept = current.tagName === "DETAILS" ? "open" : null; // a person opened or closed it
    Array.from(current.attributes).forEach(function (attribute) {
      if (attribute.name !== kept && !fresh.hasAttribute(attribute.name)) current.removeAttribute(attribute.name);
    });
    Array.from(fresh.attributes).forEach(function (attribute) {
      if (attribute.name !== kept && current.getAttribute(attribute.name) !== attribute.value) current.setAttribute(attribute.name, attribute.value);
    });
  }

  function idOf(node) {
    // Its id attribute (`form.id` is the form's field named "id", if any).
    return node.nodeType === 1 ? node.getAttribute("id") || "" : "";
  }

  function alike(current, fresh) {
    return current.nodeType === fresh.nodeType && current.nodeName === fresh.nodeName && idOf(current) === idOf(fresh);
  }

  function children(current, fresh) {
    const byId = new Map();
    Array.from(current.children).forEach(function (child) { if (idOf(child)) byId.set(idOf(child), child); });
    let cursor = current.firstChild;
    Array.from(fresh.childNodes).forEach(function (node) {
      let match = null;
      if (idOf(node)) {
        const found = byId.get(idOf(node));
        if (found && found.nodeName === node.nodeName) match = found;
      } else if (cursor && alike(cursor, node)) {
        match = cursor;
      }
      if (match === null) { current.insertBefore(node, cursor); return; }
      byId.delete(idOf(match));
      if (match === cursor) cursor = cursor.nextSibling;
      else current.insertBefore(match, cursor);
      morph(match, node);
    });
    while (cursor) {
      const next = cursor.nextSibling;
      current.removeChild(cursor);
      cursor = next;
    }
  }

  function morph(current, fresh) {
    // Make `current` like `fresh`, keeping every node that did not change
    // (a field keeps the value a person typed: only its default is set).
    if (current.nodeType !== 1) {
      if (current.nodeValue !== fresh.nodeValue) current.nodeValue = fresh.nodeValue;
      return;
    }
    attributes(current, fresh);
    if (current.tagName === "TEXTAREA") {
      if (current.defaultValue !== fresh.defaultValue) current.defaultValue = fresh.defaultValue;
      return;
    }
    children(current, fresh);
  }

  // ---------------------------------------------------------------- following

  async function refresh() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    again = false;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html", "X-Tandem-Refresh": "1" } });
      if (answer.redirected || !answer.ok) { fetchProblem = signedOut; return; }
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
      fresh.querySelectorAll("[data-region]").forEach(function (part) {
        const current = document.querySelector('[data-region="' + part.getAttribute("data-region") + '"]');
        if (current) { morph(current, part); copyButtons(current); }
      });
      fetchProblem = null;
      if (!again && latest && latest.position > shown()) advance(latest);
    } catch (error) {
      fetchProblem = "could not refresh: " + error;
    } finally {
      inFlight = false;
      judge();
      if (again) refresh();
    }
  }

  function changeArrived(event) {
    const message = JSON.parse(event.data);
    head = Math.max(head, message.position);
    if (message.position > shown()) {
      latest = message;
      const regions = Array.from(document.querySelectorAll("[data-region][data-views]"));
      if (regions.some(function (region) { return touches(region, message); })) refresh();
      else if (!inFlight) advance(message);
    }
    judge();
  }

  function copyButtons(root) {
    // An id's copy button (macros.html `ident`): hidden without this script.
    root.querySelectorAll("button[data-copy][hidden]").forEach(function (button) { button.hidden = false; });
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
      button.classList.add("copied");
      setTimeout(function () { button.classList.remove("copied"); }, 1500);
    }, function () { say("could not copy: the browser refused"); });
  });
  copyButtons(document);

  async function catchUp() {
    try {
      const answer = await fetch("/v1/health", { credentials: "same-origin", headers: { Accept: "application/json" } });
      const health = answer.ok ? await answer.json() : null;
      if (health === null || typeof health.position !== "number") { refresh(); return; }
      head = Math.max(head, health.position);
      if (health.position > shown()) refresh();
    } catch (error) {
      refresh();
    }
    judge();
  }

  function connect(on) {
    // The stream every page of the console shares (static/console-stream.js:
    // a browser keeps about six connections to a site), else the page's own.
    if (typeof SharedWorker === "function") {
      try {
        const worker = new SharedWorker("/static/console-stream.js", { name: "tandem-stream" });
        worker.port.addEventListener("message", function (event) { on[event.data.kind](event.data); });
        worker.port.start();
        window.addEventListener("pagehide", function () { worker.port.postMessage("bye"); });
        // Back from the browser's page cache: the worker forgot this page.
        window.addEventListener("pageshow", function (event) { if (event.persisted) window.location.reload(); });
        return;
      } catch (error) {
        // no shared worker here: a stream of its own
      }
    }
    const stream = new EventSource("/v1/stream?rows=keys", { withCredentials: true });
    stream.addEventListener("open", function () { on.open({}); });
    stream.addEventListener("change", function (event) { on.change({ data: event.data }); });
    stream.addEventListener("reset", function (event) { on.reset({ data: event.data }); });
    stream.addEventListener("error", function () { on.error({ closed: stream.readyState === EventSource.CLOSED }); });
  }

  function follow() {
    head = shown();
    connect({
      open: function () { streamProblem = null; judge(); catchUp(); },
      change: changeArrived,
      reset: function (message) {
        head = Math.max(head, JSON.parse(message.data).position);
        refresh();
        judge();
      },
      error: function (message) {
        streamProblem = message.closed ? signedOut : "reconnecting…";
        judge();
      },
    });
  }

  // ------------------------------------------------------------ the scrubber

  document.querySelectorAll("input[data-sync]").forEach(function (slider) {
    const box = document.getElementById(slider.getAttribute("data-sync"));
    if (!box || !slider.form) return;
    const form = slider.form;
    slider.addEventListener("input", function () { box.value = slider.value; });
    box.addEventListener("input", function () { slider.value = box.value; });
    form.addEventListener("submit", function (event) {
      // One `at` (the fields agree) and no `was`: the address a link would have.
      event.preventDefault();
      const fields = new FormData(form);
      fields.delete("was");
      fields.set("at", box.value);
      window.location.assign(form.getAttribute("action") + "?" + new URLSearchParams(fields).toString());
    });
  });

  if (document.body.getAttribute("data-live") === "on") follow();
}());
