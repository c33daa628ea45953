// Search over the index Hugo writes (layouts/index.json): every word of
// the query must occur in a page; pages rank by where the words occur (the
// title, then headings, then the text), and each result links to the
// headings that match. No server and no library: the index is one JSON
// file fetched once.
(function () {
  "use strict";
  const script = document.currentScript;
  const input = document.getElementById("q");
  const status = document.getElementById("search-status");
  const list = document.getElementById("search-results");
  // The site's root, whatever path it is served under: the index's URL is
  // relative to it, and the index's page URLs start with "/".
  const indexURL = new URL(script.dataset.index, location.href);
  const root = new URL("./", indexURL);
  const pageURL = (u) => new URL(u.replace(/^\//, ""), root).href;

  const words = (s) => s.toLowerCase().split(/[^\p{L}\p{N}_.-]+/u).filter((w) => w.length > 1);
  const count = (text, w) => {
    let n = 0;
    for (let i = text.indexOf(w); i >= 0 && n < 20; i = text.indexOf(w, i + w.length)) n++;
    return n;
  };

  function rank(index, query) {
    const q = words(query);
    const phrase = q.join(" ");
    const results = [];
    for (const page of index) {
      const title = page.t.toLowerCase();
      const text = page.c.toLowerCase();
      const headings = page.h.filter((h) => q.some((w) => h.t.toLowerCase().includes(w)));
      // The words side by side, as typed, count most: long pages mention
      // every word somewhere.
      let score = q.length > 1 ? 20 * count(title, phrase) + 5 * count(text, phrase) : 0;
      let all = true;
      for (const w of q) {
        const n = 10 * count(title, w) + 5 * headings.filter((h) => h.t.toLowerCase().includes(w)).length + count(text, w);
        if (n === 0) all = false;
        score += n;
      }
      if (all && q.length > 0) results.push({ page, score, headings });
    }
    return results.sort((a, b) => b.score - a.score).slice(0, 20);
  }

  // snippet is the text around the phrase, else around the first word found.
  function snippet(text, query) {
    const lower = text.toLowerCase();
    const q = words(query);
    let hit = lower.indexOf(q.join(" "));
    if (hit < 0) hit = Math.min(...q.map((w) => lower.indexOf(w)).filter((i) => i >= 0));
    let at = Math.max(0, hit - 60);
    if (at > 0) at = lower.indexOf(" ", at) + 1; // start on a word
    return (at > 0 ? "… " : "") + text.slice(at, at + 200).replace(/\s+/g, " ") + " …";
  }

  function show(index, query) {
    list.replaceChildren();
    const results = rank(index, query);
    status.textContent = query ? `${results.length} ${results.length === 1 ? "page" : "pages"} for “${query}”` : "";
    for (const r of results) {
      const li = document.createElement("li");
      const a = document.createElement("a");
      a.href = pageURL(r.page.u);
      a.textContent = r.page.t;
      const p = document.createElement("p");
      p.textContent = snippet(r.page.c, query);
      li.append(a, p);
      if (r.headings.length > 0) {
        const sections = document.createElement("ul");
        for (const h of r.headings.slice(0, 6)) {
          const item = document.createElement("li");
          const link = document.createElement("a");
          link.href = pageURL(r.page.u) + "#" + h.i;
          link.textContent = h.t;
          item.append(link);
          sections.append(item);
        }
        li.append(sections);
      }
      list.append(li);
    }
  }

  const query = new URLSearchParams(location.search).get("q") || "";
  input.value = query;
  fetch(indexURL)
    .then((r) => r.json())
    .then((index) => {
      show(index, query);
      input.addEventListener("input", () => show(index, input.value));
    })
    .catch((e) => { status.textContent = "The search index did not load: " + e; });
})();
