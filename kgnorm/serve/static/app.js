// kgnorm serve: the document page's side panel, keyboard shortcuts and decisions. Every value from
// the server goes into the page with textContent (el() below): no HTML is ever built from data.
"use strict";
(function () {
  const meta = (name) => { const m = document.querySelector('meta[name="' + name + '"]'); return m ? m.content : ""; };
  const TOKEN = meta("kgnorm-token");
  const READ_ONLY = meta("kgnorm-read-only") === "1";
  const STORED_NAME = "kgnorm-reviewer";
  const enc = encodeURIComponent;

  const who = document.getElementById("reviewer");
  if (who) {
    who.value = localStorage.getItem(STORED_NAME) || meta("kgnorm-reviewer");
    who.addEventListener("input", () => localStorage.setItem(STORED_NAME, who.value.trim()));
  }
  const reviewer = () => (who ? who.value.trim() : "") || meta("kgnorm-reviewer");

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);  // strings become text nodes
    return e;
  }

  async function api(method, path, body) {
    const opts = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-Kgnorm-Token"] = TOKEN;
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const data = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  // the document page (#doc) and the review queue (#queue) share the panel and the keys
  const doc = document.getElementById("doc") || document.getElementById("queue");
  if (!doc) return;
  const QUEUE = doc.id === "queue";
  const docUid = doc.dataset.doc;
  let openedAt = 0;  // when the current mention was opened: a decision sends the milliseconds since
  const panel = document.getElementById("panel");
  const textRoot = document.getElementById("doctext");
  let current = null;

  const marks = (uid) => doc.querySelectorAll('[data-mention="' + CSS.escape(uid) + '"]');
  function order() {  // the mentions j/k visit: those of the types shown
    const seen = [];
    doc.querySelectorAll("[data-mention]:not(.filtered)").forEach((m) => { if (!seen.includes(m.dataset.mention)) seen.push(m.dataset.mention); });
    return seen;
  }

  // the type filter: a type unticked loses its highlight, and clicks and j/k pass it by
  doc.querySelectorAll("[data-type-class]").forEach((box) => box.addEventListener("change", () => {
    doc.querySelectorAll("#doctext mark." + CSS.escape(box.dataset.typeClass)).forEach((e) => e.classList.toggle("filtered", !box.checked));
  }));

  function title(m) {
    let t = m.concept ? m.concept_name + " (" + m.concept + ")" : "no concept (nil)";
    if (m.review) t += " - " + m.review.decision + (m.review.reviewer ? " by " + m.review.reviewer : "") + (m.review.pending ? " (pending)" : "");
    return (m.type || "mention") + ": " + t;
  }

  async function refresh(uid, rec) {
    if (QUEUE) return refreshQueue(uid, rec);
    const d = await api("GET", "/api/documents/" + enc(docUid));
    for (const m of d.mentions) {  // m.classes: the server's rule (kgnorm.serve.highlight.mark_classes)
      marks(m.uid).forEach((e) => {
        e.classList.remove("reviewed", "pending", "nil", "low", "conflict");
        m.classes.forEach((c) => e.classList.add(c));
        if (e.tagName === "MARK") e.title = title(m);
      });
    }
  }

  async function refreshQueue(uid, rec) {
    marks(uid).forEach((e) => e.classList.toggle("done", rec.decision !== "withdraw"));
    progress().catch((e) => { const msg = document.getElementById("panel-msg"); if (msg) msg.textContent = e.message; });
  }

  async function progress() {  // not awaited: on a big store the count takes seconds, the next text must not wait
    const q = await api("GET", "/api/queue?limit=1&order=" + enc(doc.dataset.order) + "&type=" + enc(doc.dataset.type));
    const set = (id, v) => { const e = document.getElementById(id); if (e) e.textContent = v; };
    set("n-reviewed", q.progress.reviewed);
    set("n-mentions", q.progress.mentions);
    set("n-forms", q.forms);
    if (q.progress.predicted_wrong_share !== null) set("wrong-share", Math.round(100 * q.progress.predicted_wrong_share) + "%");
  }

  function select(uid) {
    doc.querySelectorAll(".selected").forEach((e) => e.classList.remove("selected"));
    current = uid;
    const ms = marks(uid);
    ms.forEach((e) => e.classList.add("selected"));
    if (ms.length) ms[0].scrollIntoView({ block: "nearest" });
    history.replaceState(null, "", "#m=" + enc(uid));
    openedAt = performance.now();
    showPanel(uid);
  }

  async function showPanel(uid) {
    panel.hidden = false;
    panel.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
    try {
      const m = await api("GET", "/api/mentions/" + enc(uid));
      if (current === uid) render(m);
    } catch (e) {
      panel.replaceChildren(el("p", { class: "msg", text: e.message }));
    }
  }

  function candidate(c, chosen) {
    const li = el("li", { "data-candidate": c.uid, "data-ontology": c.ontology || "", class: (chosen ? "chosen " : "") + (READ_ONLY ? "readonly" : "") },
      el("strong", { text: c.name || c.uid }), " ", el("span", { class: "muted", text: c.uid }),
      c.score !== undefined && c.score !== null ? el("span", { class: "muted", text: "  " + Number(c.score).toPrecision(3) }) : null, " ",
      el("a", { href: "/concepts/" + enc(c.uid), target: "_blank", rel: "noopener", title: "the concept's page", text: "↗", on: { click: (e) => e.stopPropagation() } }));
    if (c.matched) li.append(el("div", { class: "syn", text: "matched: " + c.matched }));
    if (c.synonyms && c.synonyms.length) li.append(el("div", { class: "syn", text: "synonyms: " + c.synonyms.join(" · ") }));
    if (c.definition) li.append(el("div", { class: "def", text: c.definition }));
    if (c.parents && c.parents.length) li.append(el("div", { class: "par", text: "is a: " + c.parents.map((p) => p.name + " (" + p.uid + ")").join(" · ") }));
    if (c.ontology && !c.synonyms) li.append(el("div", { class: "par", text: c.ontology }));
    return li;
  }

  function render(m) {
    const msg = el("p", { class: "msg", id: "panel-msg" });
    const now = m.concept ? el("a", { href: "/concepts/" + enc(m.concept), text: (m.concept_name || m.concept) + " (" + m.concept + ")" }) : el("span", { class: "muted", text: "nil (no concept)" });
    const parts = [
      el("h2", { text: m.text }),
      el("p", { class: "muted", text: (m.type || "mention") + " · " + m.start + "–" + m.end + " · " + m.uid }),
      el("p", {}, "now: ", now),
      el("p", { class: "muted", text: "machine: " + (m.machine_concept ? m.machine_concept_name + " (" + m.machine_concept + ") score " + (m.score === null ? "?" : Number(m.score).toPrecision(3)) : "nil") }),
    ];
    if (m.review) parts.push(el("p", { text: "reviewed: " + m.review.decision + (m.review.reviewer ? " by " + m.review.reviewer : "") + (m.review.pending ? " (pending: the store is busy)" : "") }));
    if (m.conflict) parts.push(el("p", { class: "conflict", text: "reviewers disagree on this mention (see the history)" }));
    const also = Array.from(marks(m.uid)).flatMap((e) => (e.dataset.also ? JSON.parse(e.dataset.also) : []));
    if (also.length) parts.push(el("p", { class: "muted" }, "also here: ", ...[...new Set(also)].map((u) => el("a", { href: "#", text: u + " ", on: { click: (e) => { e.preventDefault(); select(u); } } }))));
    if (!READ_ONLY) {
      parts.push(el("div", { class: "actions" },
        el("button", { type: "button", text: "Accept (a)", disabled: !m.concept, on: { click: () => decide("accept") } }),
        el("button", { type: "button", text: "Nil (x)", on: { click: () => decide("nil") } }),
        el("button", { type: "button", text: "Not a mention (n)", on: { click: () => decide("not_a_mention") } }),
        m.review ? el("button", { type: "button", id: "withdraw", text: "Withdraw review (u)", on: { click: () => decide("withdraw") } }) : null), msg);
    }
    parts.push(el("h3", { text: "Candidates" + (m.candidates_from === "model" ? " (model)" : "") }));
    parts.push(el("ul", { class: "cands" }, ...m.candidates.map((c) => candidate(c, c.uid === m.concept))));
    if (!READ_ONLY) {
      const results = el("ul", { class: "cands" });
      const box = el("input", { type: "search", placeholder: "search concepts…", autocomplete: "off" });
      let timer = null;
      box.addEventListener("input", () => {
        clearTimeout(timer);
        timer = setTimeout(async () => {
          const q = box.value.trim();
          if (!q) { results.replaceChildren(); return; }
          const own = m.ontology ? "&ontology=" + enc(m.ontology) : "";  // the mention's own ontology's concepts
          try { results.replaceChildren(...(await api("GET", "/api/concepts?q=" + enc(q) + own)).concepts.map((c) => candidate(c, false))); }
          catch (e) { msg.textContent = e.message; }
        }, 200);
      });
      parts.push(el("h3", { text: "Another concept" + (m.ontology ? " (" + m.ontology + ")" : "") }), box, results);
    }
    if (m.reviews.length) parts.push(el("h3", { text: "History (newest first)" }), el("ul", { id: "history" }, ...m.reviews.map((r) => el("li", { class: "muted", text: r.created_at.slice(0, 19).replace("T", " ") + " " + r.decision + (r.concept_uid ? " " + r.concept_uid : "") + " by " + (r.reviewer || "(no name)") + (r.propagated_from ? " (same text)" : "") + (r.elapsed_ms !== null && r.elapsed_ms !== undefined ? " in " + (r.elapsed_ms / 1000).toFixed(1) + " s" : "") + (r.pending ? " (pending)" : "") }))));
    panel.replaceChildren(...parts);
  }

  async function decide(decision, concept, ontology) {
    if (READ_ONLY || !current) return;
    const uid = current;
    const body = { decision: decision, concept: concept || "", ontology: ontology || "", reviewer: reviewer(),
                   elapsed_ms: Math.max(0, Math.round(performance.now() - openedAt)) };
    const same = document.getElementById("same-text");
    if (QUEUE && same && same.checked && decision !== "withdraw") body.apply_to_same_text = true;
    try {
      const rec = await api("POST", "/api/mentions/" + enc(uid) + "/review", body);
      await refresh(uid, rec);
      if (QUEUE && decision !== "withdraw") { if (current === uid) move(1, true); }
      else if (current === uid) { openedAt = performance.now(); await showPanel(uid); }
    } catch (e) {
      const msg = document.getElementById("panel-msg");
      if (msg) msg.textContent = e.message;
    }
  }

  panel.addEventListener("click", (e) => {
    const li = e.target.closest("[data-candidate]");
    if (li && !READ_ONLY) decide("concept", li.dataset.candidate, li.dataset.ontology);
  });

  doc.addEventListener("click", (e) => {
    const link = e.target.closest("a[href]");
    if (link && !link.dataset.mention) return;  // a link in a queue row: follow it
    const m = e.target.closest("[data-mention]");
    if (!m || !doc.contains(m) || m.classList.contains("filtered")) return;
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed && textRoot && textRoot.contains(sel.anchorNode)) return;  // selecting text to add
    e.preventDefault();
    select(m.dataset.mention);
  });

  function offsetOf(node, off) {
    if (node === textRoot) {
      const kids = textRoot.childNodes;
      return off < kids.length ? Number(kids[off].dataset.off) : textRoot.textContent.length;
    }
    if (node.nodeType === Node.TEXT_NODE) return Number(node.parentElement.dataset.off) + off;
    if (node.dataset && node.dataset.off !== undefined) return Number(node.dataset.off) + (off > 0 ? node.textContent.length : 0);
    return NaN;
  }

  const add = document.getElementById("add-mention");
  if (add && textRoot) {
    add.addEventListener("click", async () => {
      const sel = window.getSelection();
      if (!sel || sel.isCollapsed || !textRoot.contains(sel.anchorNode) || !textRoot.contains(sel.focusNode)) {
        alert("Select the words of the mention in the text first.");
        return;
      }
      const r = sel.getRangeAt(0);
      const text = textRoot.textContent;
      let start = offsetOf(r.startContainer, r.startOffset), end = offsetOf(r.endContainer, r.endOffset);
      while (start < end && /\s/.test(text[start])) start++;
      while (end > start && /\s/.test(text[end - 1])) end--;
      if (!(start < end)) return;
      const type = (document.getElementById("add-type") || {}).value || "";
      try {
        const rec = await api("POST", "/api/documents/" + enc(docUid) + "/mentions", { start: start, end: end, type: type, reviewer: reviewer() });
        location.hash = "#m=" + enc(rec.mention_uid);
        location.reload();
      } catch (e) {
        alert(e.message);
      }
    });
  }

  const markDone = document.getElementById("mark-done");
  if (markDone) {  // refused (409) while a mention has no current review: the first of them is opened
    markDone.addEventListener("click", async () => {
      const r = await fetch("/api/documents/" + enc(docUid) + "/done", { method: "POST", credentials: "same-origin",
        headers: { "Accept": "application/json", "Content-Type": "application/json", "X-Kgnorm-Token": TOKEN },
        body: JSON.stringify({ reviewer: reviewer() }) });
      const data = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
      if (r.ok) { location.reload(); return; }
      alert(data.error || r.statusText);
      if (data.unreviewed && data.unreviewed.length) select(data.unreviewed[0]);
    });
  }

  function move(step, undone) {
    const all = order();
    if (!all.length) return;
    const i = all.indexOf(current);
    if (undone) {  // the queue after a decision: the next text not decided yet, or stay
      const next = all.slice(i + 1).concat(all.slice(0, i + 1)).find((u) => !marks(u)[0].classList.contains("done"));
      if (next) select(next); else showPanel(current);
      return;
    }
    select(all[i < 0 ? (step > 0 ? 0 : all.length - 1) : (i + step + all.length) % all.length]);
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    const keys = { a: "accept", x: "nil", n: "not_a_mention", u: "withdraw" };
    if (e.key === "j" || e.key === "k") { e.preventDefault(); move(e.key === "j" ? 1 : -1); }
    else if (e.key === "Escape") { panel.hidden = true; current = null; doc.querySelectorAll(".selected").forEach((x) => x.classList.remove("selected")); }
    else if (keys[e.key] && current && !READ_ONLY) { e.preventDefault(); decide(keys[e.key]); }
  });

  const m = /^#m=(.+)$/.exec(location.hash);
  if (m) {
    const uid = decodeURIComponent(m[1]);
    if (marks(uid).length) select(uid);
  }
})();
