// The contrast of every text a console graph draws, against what is painted under it: the
// elements stacked at the text's centre, from the top, until one is opaque (an HTML
// background or an SVG shape's fill), blended as the browser blends them. Marks without
// text (the start and end circles) are measured against the canvas; the lit node's
// outline too, and the outlines of the path taken (the states visited, the edges taken);
// the state an instance ended in is measured again as its outcome ('ended completed'). Run by tests/support/browser.py's graph_contrast in the page.
const canvas = document.querySelector('.graph-canvas[data-rendered]');
const parse = (c) => {
  const m = /rgba?\(([^)]+)\)/.exec(c || '');
  if (!m) return null;
  const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
};
const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3])).concat([1]);
const lum = (c) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
};
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const shapes = 'rect, path, polygon, circle, ellipse';
const paint = (el) => {
  const s = getComputedStyle(el);
  if (el instanceof SVGElement) {
    if (!el.matches(shapes) || s.fill === 'none' || s.visibility === 'hidden') return null;
    const c = parse(s.fill);
    if (!c) return null;
    c[3] *= Number(s.fillOpacity) * Number(s.opacity);
    return c;
  }
  const c = parse(s.backgroundColor);
  return c && c[3] > 0 ? c : null;
};
const base = parse(getComputedStyle(canvas).backgroundColor);
const under = (el) => {
  const r = el.getBoundingClientRect();
  const stack = document.elementsFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const layers = [];
  for (const e of stack.slice(stack.indexOf(el) + 1)) {
    if (e === canvas) break;
    const c = paint(e);
    if (c) { layers.push(c); if (c[3] >= 1) break; }
  }
  return layers.reverse().reduce((acc, c) => over(c, acc), base);
};
const out = [];
const texts = [...canvas.querySelectorAll('g.node, g.edgeLabel')].flatMap((g) =>
  [...g.querySelectorAll('span, text')].filter((t) => t.textContent.trim() && !t.querySelector('span, tspan'))
    .map((t) => [g, t]));
for (const [g, t] of texts) {
  t.scrollIntoView({block: 'center', inline: 'center'});
  const s = getComputedStyle(t);
  const fg = parse(t instanceof SVGElement ? s.fill : s.color);
  const bg = under(t);
  const kind = g.classList.contains('edgeLabel') ? 'edge label'
    : g.classList.contains('sw-current') ? 'current' : g.classList.contains('task') ? 'task'
    : g.classList.contains('wait') ? 'wait' : 'state';
  out.push({kind, text: t.textContent.trim(), ratio: ratio(over(fg, bg), bg), fg: s.color, bg: bg.join()});
  if (g.dataset.outcome) {
    out.push({kind: `ended ${g.dataset.outcome}`, text: t.textContent.trim(), ratio: ratio(over(fg, bg), bg), fg: s.color, bg: bg.join()});
  }
}
for (const g of canvas.querySelectorAll('g.node[id*="root_start"], g.node[id*="root_end"]')) {
  g.scrollIntoView({block: 'center', inline: 'center'});
  const fills = [...g.querySelectorAll(shapes)].map(paint).filter(Boolean);
  const best = Math.max(...fills.map((c) => ratio(over(c, base), base)));
  out.push({kind: g.id.includes('root_end') ? 'final' : 'start', text: '', ratio: best, fg: '', bg: base.join()});
}
for (const g of canvas.querySelectorAll('g.node.sw-current')) {
  const stroke = parse(getComputedStyle(g.querySelector(shapes)).stroke);
  out.push({kind: 'current outline', text: g.getAttribute('data-current'), ratio: ratio(stroke, base), fg: '', bg: base.join()});
}
for (const g of canvas.querySelectorAll('g.node.sw-visited:not(.sw-current)')) {
  const stroke = parse(getComputedStyle(g.querySelector(shapes)).stroke);
  out.push({kind: 'path outline', text: g.id, ratio: ratio(stroke, base), fg: '', bg: base.join()});
}
for (const path of canvas.querySelectorAll('path.sw-taken')) {
  out.push({kind: 'taken edge', text: path.id, ratio: ratio(parse(getComputedStyle(path).stroke), base), fg: '', bg: base.join()});
}
return out;
