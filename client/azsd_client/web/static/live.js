// azs web: the live parts of a page. Nothing here builds HTML from text: new transcript items come
// from the server already rendered and escaped by its templates (the same ones the page used).
"use strict";
(function () {
  const main = document.querySelector("main[data-live]");
  const banner = document.getElementById("daemon");

  // A seq in the URL's #fragment: the folded tool call it is, or is inside, opened and shown.
  function reveal() {
    const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (!target) return;
    for (let node = target.parentElement; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    const own = target.querySelector(":scope > details");  // a link to a tool call opens the call
    if (own) own.open = true;
    target.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", reveal);
  reveal();

  // The context meter and where the latest `azs compact` ends: asked after the first screen (both
  // read the whole session since its latest compaction).
  const transcriptNode = document.getElementById("transcript");
  function showMeter(data) {
    const box = document.getElementById("meter");
    if (!box || typeof data.chars !== "number") return;
    const percent = Math.round((100 * data.chars) / data.threshold);
    box.querySelector("meter").value = data.chars;
    box.querySelector(".meter-text").textContent =
      `${data.chars.toLocaleString("en")} of ${data.threshold.toLocaleString("en")} chars (${percent}%)`;
    box.hidden = false;
  }
  if (transcriptNode && transcriptNode.dataset.context) {
    fetch(transcriptNode.dataset.context, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : { after: 0 }))
      .then((data) => {
        showMeter(data);
        const after = Number(data.after);
        const next = Array.from(transcriptNode.querySelectorAll(":scope > [data-seq]"))
          .find((node) => Number(node.dataset.seq) > after);
        if (!after || !next || Number(transcriptNode.firstElementChild?.dataset.seq) > after + 1) return;
        const marker = document.createElement("div");
        marker.className = "event compaction-boundary boundary";
        marker.id = "compacted";
        marker.dataset.after = String(after);
        const line = document.createElement("p");
        line.className = "line";
        const strong = document.createElement("strong");
        strong.textContent = "Compacted";
        line.append(strong, `: seqs 1–${after} are summarised; the next turn's context is that summary and what follows`);
        marker.appendChild(line);
        transcriptNode.insertBefore(marker, next);
      })
      .catch(() => {});
  }

  if (!main || !window.EventSource) return;
  const reload = main.dataset.reload === "1";
  let wasDown = false;

  function showDaemon(up) {
    if (banner) banner.hidden = up;
    document.body.classList.toggle("daemon-down", !up);
    if (up && reload && wasDown) location.reload();
    if (!up) wasDown = true;
  }

  const transcript = document.getElementById("transcript");
  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }
  function pendingCall(tool) {
    for (const details of document.querySelectorAll("details.tool[data-pending]")) {
      if (details.dataset.tool === tool) return details;
    }
    return null;
  }
  function onEvents(e) {
    if (!transcript) return;
    const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
    let added = 0;
    for (const item of JSON.parse(e.data).items) {
      if (document.getElementById("seq-" + item.seq)) continue; // already shown
      added += 1;
      const call = item.tool ? pendingCall(item.tool) : null;
      if (call) {
        call.appendChild(fragment(item.fold));
        delete call.dataset.pending;
        const outcome = call.querySelector(".outcome");
        const failed = call.querySelector(".result.error") !== null;
        if (outcome) outcome.textContent = failed ? "✗ error" : "✓";
        if (failed) call.parentElement.classList.add("failed");
      } else {
        const node = fragment(item.html);
        const first = node.firstElementChild;
        if (first) first.classList.add("fresh");
        transcript.appendChild(node);
      }
    }
    const count = document.getElementById("event-count"); // the header says what the page shows
    if (count && added) {
      const total = Number(count.dataset.count) + added;
      count.dataset.count = String(total);
      count.textContent = total.toLocaleString("en");
    }
    const newest = JSON.parse(e.data).items.slice(-1)[0];
    const lastSeq = document.getElementById("last-seq");
    if (newest && lastSeq) lastSeq.textContent = String(newest.seq);
    if (atBottom) window.scrollTo(0, document.body.scrollHeight);
  }
  function onSession(e) {
    const data = JSON.parse(e.data);
    const word = document.getElementById("state-word");
    const badge = document.getElementById("state");
    const marks = { succeeded: "✓", failed: "✗", running: "●", ended: "○" };
    if (word) word.textContent = data.state;
    if (badge) {
      badge.textContent = marks[data.state] || data.state;
      badge.className = "badge state-" + data.state;
      badge.title = data.state;
    }
  }

  // One stream at a time; when it fails for good (azs web restarted, or answered with an error), a
  // new one is opened after a while, from the newest seq shown.
  let source = null;
  function newest() {
    let seq = 0;
    for (const node of document.querySelectorAll("#transcript [data-seq]")) seq = Math.max(seq, Number(node.dataset.seq));
    return seq;
  }
  function connect() {
    const url = new URL(main.dataset.live, location.href);
    if (url.searchParams.has("after")) url.searchParams.set("after", String(newest()));
    source = new EventSource(url.pathname + url.search);
    source.addEventListener("daemon", (e) => showDaemon(JSON.parse(e.data).up));
    source.addEventListener("events", onEvents);
    source.addEventListener("session", onSession);
    source.addEventListener("open", () => { if (banner && !document.body.classList.contains("daemon-down")) banner.hidden = true; });
    source.addEventListener("error", () => {
      if (banner) banner.hidden = false; // the view itself is not answering: say so until it is back
      if (source.readyState === EventSource.CLOSED) setTimeout(connect, 2000);
    });
  }
  connect();
})();
