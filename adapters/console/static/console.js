// Tandem console: live pages. The page is complete without this script;
// with it, each commit announced on /v1/stream (the session cookie
// authenticates it) refetches the page and swaps its [data-region] parts in
// place, keeping what a person typed in a form that is not sent yet (and
// the "what if…" boxes they opened).
"use strict";

(function () {
  const body = document.body;
  const state = document.querySelector(".live-state");
  let inFlight = false;
  let again = false;

  function say(text) {
    if (state) state.textContent = text;
  }

  function typed(root) {
    // Values a person changed and has not sent, by form key and field name.
    const kept = new Map();
    root.querySelectorAll("form[data-keep]").forEach(function (form) {
      const owner = form.closest("[data-key]");
      const key = owner ? owner.getAttribute("data-key") : form.getAttribute("action");
      form.querySelectorAll("textarea, input:not([type=hidden])").forEach(function (field) {
        if (field.value !== field.defaultValue) kept.set(key + "\n" + field.name, field.value);
      });
    });
    return kept;
  }

  function restore(root, kept) {
    root.querySelectorAll("form[data-keep]").forEach(function (form) {
      const owner = form.closest("[data-key]");
      const key = owner ? owner.getAttribute("data-key") : form.getAttribute("action");
      form.querySelectorAll("textarea, input:not([type=hidden])").forEach(function (field) {
        const value = kept.get(key + "\n" + field.name);
        if (value !== undefined) field.value = value;
      });
    });
  }

  async function refresh() {
    if (inFlight) { again = true; return; }
    inFlight = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html", "X-Tandem-Refresh": "1" } });
      if (answer.redirected || !answer.ok) { say("signed out or failing: reload the page"); return; }
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
      const focused = document.activeElement && document.activeElement.id;
      fresh.querySelectorAll("[data-region]").forEach(function (part) {
        const current = document.querySelector('[data-region="' + part.getAttribute("data-region") + '"]');
        if (!current) return;
        const kept = typed(current);
        const opened = Array.from(current.querySelectorAll("details[open][id]"), function (open) { return open.id; });
        current.replaceWith(part);
        copyButtons(part);
        restore(part, kept);
        opened.forEach(function (id) { const open = document.getElementById(id); if (open) open.open = true; });
      });
      if (focused) { const field = document.getElementById(focused); if (field) field.focus(); }
      say("live");
    } catch (error) {
      say("could not refresh: " + error);
    } finally {
      inFlight = false;
      if (again) { again = false; refresh(); }
    }
  }

  function follow() {
    const views = body.getAttribute("data-views") || "*";
    const url = "/v1/stream" + (views && views !== "*" ? "?views=" + encodeURIComponent(views) : "");
    const stream = new EventSource(url, { withCredentials: true });
    let broken = false;
    stream.addEventListener("open", function () { say("live"); if (broken) { broken = false; refresh(); } });
    stream.addEventListener("change", refresh);
    stream.addEventListener("reset", refresh);
    stream.addEventListener("error", function () { broken = true; say(stream.readyState === EventSource.CLOSED ? "signed out or failing: reload the page" : "reconnecting…"); });
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
      button.textContent = "copied";
      setTimeout(function () { button.classList.remove("copied"); button.textContent = "copy"; }, 1500);
    }, function () { say("could not copy: the browser refused"); });
  });
  copyButtons(document);

  document.querySelectorAll("input[data-sync]").forEach(function (slider) {
    const target = document.getElementById(slider.getAttribute("data-sync"));
    if (!target) return;
    slider.addEventListener("input", function () { target.value = slider.value; });
    target.addEventListener("input", function () { slider.value = target.value; });
  });

  if (body.getAttribute("data-live") === "on") follow();
}());
