// privdb's web page: the helpers app.js, surveys.js and publish.js share, loaded before them as one frozen
// namespace (window.privdbCommon). Server text only ever reaches the page as text nodes (never as HTML).
"use strict";

window.privdbCommon = (() => {
  const TOKEN_KEY = "privdb.token"; // sessionStorage: the signed-in token, for this tab only
  const SVG_NS = "http://www.w3.org/2000/svg";

  const $ = (id) => document.getElementById(id);

  // ---- building DOM safely: attributes (null, undefined and false skipped, true empty, "on…" a listener),
  // then the children (arrays flattened, null, undefined and false skipped, anything not a node as text)
  function build(node, attrs, children) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }
  const el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
  const svg = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);
  // Replaces a node's children (as `build` takes them).
  const fill = (node, ...children) => {
    node.replaceChildren();
    return build(node, {}, children);
  };

  // ---- the API: `fetch` with the token as a Bearer header (the signed-in one unless given) and `body`, if
  // any, as JSON. The response comes back as it is: each caller reads its status and body in its own way.
  function authFetch(path, { method = "GET", body, token = sessionStorage.getItem(TOKEN_KEY) } = {}) {
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  }

  return Object.freeze({ TOKEN_KEY, $, el, svg, fill, authFetch });
})();
