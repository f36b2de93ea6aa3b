// Stands in for every module of Mermaid the console does not ship (console/build.mjs):
// other diagram types, other layouts, KaTeX. A graph is a state diagram drawn with dagre,
// so none of them is asked for; if one is, the graph says so instead of loading it.

const missing = (): never => {
  throw new Error("the console draws state diagrams only");
};

export const diagram = new Proxy({}, { get: missing });
export const render = missing;

// KaTeX, for a label with $$...$$ in it (a guard may compare with such a string): the
// label is shown as written, escaped, since the console draws no math.
const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
export default { renderToString: (text: string): string => escape(`$$${text}$$`) };
