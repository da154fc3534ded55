// The page as lines of text for a model, the interactive elements
// numbered: `[3] link "About" -> /about`. Run by `snapshot.rs` with
// Runtime.evaluate; returns {title, url, lines, refs}. The numbered
// elements are kept in window.__hearth.refs for the actions that follow.
(() => {
  const TEXT_MAX = 160, LABEL_MAX = 80, HREF_MAX = 60, OPTIONS_MAX = 8;
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "svg"]);
  const BLOCK = new Set(["block", "flex", "grid", "list-item", "table", "table-row", "table-caption", "flow-root"]);
  const ROLES = new Set(["button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "option",
    "combobox", "textbox", "searchbox", "slider", "menuitemcheckbox", "menuitemradio", "treeitem"]);
  const refs = [];
  const lines = [];
  let line = "";
  const squash = (s) => (s || "").replace(/\s+/g, " ").trim();
  const cut = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  const flush = (prefix) => {
    const text = squash(line);
    if (text && lines[lines.length - 1] !== text) lines.push(cut(text, TEXT_MAX * 4));
    line = prefix || "";
  };
  const visible = (el, style) => {
    if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse") return false;
    if (el.getAttribute("aria-hidden") === "true") return false;
    return el.getClientRects().length > 0 || style.display === "contents";
  };
  const labelOf = (el) => {
    const aria = el.getAttribute("aria-label");
    if (aria) return aria;
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const text = by.split(/\s+/).map((id) => el.ownerDocument.getElementById(id)).filter(Boolean)
        .map((n) => n.innerText || n.textContent).join(" ");
      if (squash(text)) return text;
    }
    if (el.labels && el.labels.length) return Array.from(el.labels).map((l) => l.innerText).join(" ");
    return el.getAttribute("placeholder") || el.getAttribute("title") || el.getAttribute("alt") ||
      el.getAttribute("name") || "";
  };
  const kindOf = (el) => {
    const tag = el.tagName;
    const role = el.getAttribute("role");
    if (tag === "A" && el.hasAttribute("href")) return "link";
    if (tag === "BUTTON" || tag === "SUMMARY") return "button";
    if (tag === "SELECT") return "select";
    if (tag === "TEXTAREA") return "textbox";
    if (tag === "INPUT") {
      const type = (el.getAttribute("type") || "text").toLowerCase();
      if (type === "hidden") return null;
      if (["submit", "button", "reset", "image"].includes(type)) return "button";
      if (["checkbox", "radio", "file", "password", "range", "color", "date", "time",
        "datetime-local", "month", "week"].includes(type)) return type;
      if (type === "search") return "searchbox";
      return "textbox";
    }
    if (role && ROLES.has(role)) return role;
    if (el.isContentEditable && (el.parentElement == null || !el.parentElement.isContentEditable)) return "textbox";
    return null;
  };
  const describe = (el, kind, n) => {
    let label = squash(kind === "link" || kind === "button" || kind === "tab" || kind === "menuitem" || kind === "option"
      ? (el.innerText || el.value || labelOf(el)) : labelOf(el));
    if (!label && (kind === "link" || kind === "button")) {
      const img = el.querySelector("img[alt],[aria-label]");
      if (img) label = squash(img.getAttribute("alt") || img.getAttribute("aria-label"));
    }
    let out = `[${n}] ${kind}`;
    if (label) out += ` "${cut(label, LABEL_MAX)}"`;
    if (kind === "link") {
      const href = el.getAttribute("href") || "";
      let shown = href;
      try {
        const u = new URL(href, el.ownerDocument.baseURI);
        shown = u.origin === location.origin ? u.pathname + u.search + u.hash : u.href;
      } catch (e) { /* a href that is not a URL is shown as written */ }
      if (shown && shown !== "#" && !shown.startsWith("javascript:")) out += ` -> ${cut(shown, HREF_MAX)}`;
    } else if (kind === "password" || el.hasAttribute("data-hearth-secret")) {
      // A secret's text is never shown: the host typed it, the model
      // named it.
      if (el.value || el.innerText) out += " (filled)";
    } else if (kind === "checkbox" || kind === "radio" || kind === "switch") {
      const on = el.checked === true || el.getAttribute("aria-checked") === "true";
      out += on ? " [x]" : " [ ]";
    } else if (kind === "select") {
      const options = Array.from(el.options || []);
      const chosen = options.filter((o) => o.selected).map((o) => squash(o.text));
      if (chosen.length) out += ` = "${cut(chosen.join(", "), LABEL_MAX)}"`;
      const names = options.slice(0, OPTIONS_MAX).map((o) => cut(squash(o.text), 30));
      out += ` options: ${names.join(" | ")}${options.length > OPTIONS_MAX ? ` | … (${options.length})` : ""}`;
    } else if (kind === "textbox" || kind === "searchbox" || kind === "combobox") {
      const value = el.isContentEditable ? squash(el.innerText) : el.value;
      if (value) out += ` = "${cut(squash(value), LABEL_MAX)}"`;
    } else if (kind === "file") {
      if (el.files && el.files.length) out += ` = ${Array.from(el.files).map((f) => f.name).join(", ")}`;
    }
    if (el.disabled) out += " (disabled)";
    return out;
  };
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      line += node.nodeValue;
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
    if (node.nodeType === Node.ELEMENT_NODE) {
      const el = node;
      if (SKIP.has(el.tagName)) return;
      const style = el.ownerDocument.defaultView.getComputedStyle(el);
      if (!visible(el, style)) return;
      const kind = kindOf(el);
      const block = BLOCK.has(style.display) || el.tagName === "BR";
      const heading = /^H([1-6])$/.exec(el.tagName);
      if (kind) {
        refs.push(el);
        const text = " " + describe(el, kind, refs.length) + " ";
        if (block) { flush(); line = text; flush(); } else line += text;
        return;
      }
      if (block) flush(heading ? "#".repeat(Number(heading[1])) + " " : el.tagName === "LI" ? "- " : "");
      if (el.tagName === "IFRAME") {
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.body) walk(doc.body);
        else line += " [frame] ";
      } else if (el.tagName === "IMG") {
        const alt = squash(el.getAttribute("alt"));
        if (alt) line += ` (image: ${cut(alt, LABEL_MAX)}) `;
      } else if (el.tagName === "SLOT") {
        for (const child of el.assignedNodes({ flatten: true })) walk(child);
      } else {
        for (const child of (el.shadowRoot || el).childNodes) walk(child);
      }
      if (block) flush();
      else if (style.display === "table-cell" || style.display === "inline-block") line += " ";
      return;
    }
    for (const child of node.childNodes) walk(child);
  };
  if (document.body) walk(document.body);
  flush();
  window.__hearth = { refs };
  return { title: document.title, url: location.href, lines, refs: refs.length };
})()
