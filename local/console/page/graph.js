/**
 * The state machine's graph, drawn from the definition local mode runs: placed by dagre (its
 * browser bundle, served from node_modules as the global `dagre`) and drawn as SVG at a scale
 * the page chooses (1: labels at their CSS size), in a frame that scrolls. The compact view folds
 * each Route, Wait, Choice and Pass state into the step it serves, and draws a catch edge only
 * when the run took it (or no other edge leads to its state); the full view draws every state
 * and edge of the definition.
 */
const SVG = 'http://www.w3.org/2000/svg';
const LINE_HEIGHT = 17;
/** About the width of a character of a 13 px label, and of a 12 px one (a little over the average, to fit). */
const CHAR_WIDTH = [7.4, 6.8];
/** What the compact view folds: states that route, wait or name an outcome for a step. */
const FOLDED = new Set(['Choice', 'Wait', 'Pass']);

/** Every transition of the definition, once per pair of states. */
export function edgesOf(definition) {
  const edges = new Map();
  const add = (from, to, kind) => {
    if (typeof to === 'string' && !edges.has(`${from}→${to}`)) edges.set(`${from}→${to}`, { from, to, kind });
  };
  for (const [name, state] of Object.entries(definition.States)) {
    add(name, state.Next, 'next');
    add(name, state.Default, 'choice');
    for (const choice of state.Choices ?? []) add(name, choice.Next, 'choice');
    for (const catcher of state.Catch ?? []) add(name, catcher.Next, 'catch');
  }
  return [...edges.values()];
}

/**
 * The state each state is drawn in by the compact view: a Wait or Pass in the state it leads
 * to, a Choice in the first state that leads to it (the step whose answer it routes), any other
 * in itself.
 */
export function hostsOf(definition) {
  const edges = edgesOf(definition).filter((edge) => edge.kind !== 'catch');
  const hostOf = (name, seen) => {
    const state = definition.States[name];
    if (!FOLDED.has(state.Type) || seen.has(name)) return name;
    seen.add(name);
    const served = state.Type === 'Choice' ? edges.find((edge) => edge.to === name)?.from : state.Next;
    return served === undefined ? name : hostOf(served, seen);
  };
  return Object.fromEntries(Object.keys(definition.States).map((name) => [name, hostOf(name, new Set())]));
}

/**
 * Draws `definition` into `svg` at `zoom`. `marks` maps a state's name to 'passed', 'current'
 * or 'failed'; `onSelect(name)` is called when a state is clicked.
 */
export function drawGraph(svg, definition, marks, { compact, zoom, onSelect }) {
  const names = Object.keys(definition.States);
  const hosts = compact ? hostsOf(definition) : Object.fromEntries(names.map((name) => [name, name]));
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 14, ranksep: 34, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const host of new Set(Object.values(hosts))) {
    const members = names.filter((name) => hosts[name] === host);
    const folded = members.filter((name) => name !== host);
    const lines = [host];
    if (folded.length > 0) lines.push(folded.length > 1 ? `+ ${folded.length} states` : `+ ${folded[0]}`);
    // A step is current while a state folded into it is (its Wait, say).
    const mark = members.some((name) => marks[name] === 'current') ? 'current' : (marks[host] ?? 'unreached');
    const width = Math.max(...lines.map((line, index) => line.length * CHAR_WIDTH[index])) + 24;
    graph.setNode(host, { lines, members, mark, width, height: lines.length * LINE_HEIGHT + 12 });
  }
  const edges = edgesOf(definition);
  const reached = new Set(edges.filter((edge) => edge.kind !== 'catch').map((edge) => edge.to));
  for (const edge of edges) {
    const [from, to] = [hosts[edge.from], hosts[edge.to]];
    const walked =
      marks[edge.to] !== undefined &&
      (edge.kind === 'catch' ? marks[edge.from] === 'failed' : marks[edge.from] !== undefined);
    // The compact view draws a catch edge the run took, or one that is the only way into a state.
    const shown = !compact || edge.kind !== 'catch' || walked || !reached.has(edge.to);
    if (from === to || !shown) continue;
    const drawn = graph.edge(from, to);
    if (drawn === undefined) graph.setEdge(from, to, { kind: edge.kind, walked });
    else drawn.walked ||= walked;
  }
  dagre.layout(graph);

  svg.replaceChildren(svg.querySelector('defs'));
  for (const edge of graph.edges()) {
    const { points, kind, walked } = graph.edge(edge);
    const d = points.map((point, index) => `${index === 0 ? 'M' : 'L'}${point.x},${point.y}`).join(' ');
    const attributes = { d, class: `edge ${kind}${walked ? ' walked' : ''}`, 'marker-end': 'url(#arrow)' };
    svg.append(element('path', { ...attributes, 'data-from': edge.v, 'data-to': edge.w }));
  }
  for (const name of graph.nodes()) svg.append(nodeOf(name, graph.node(name), definition, onSelect));
  // The drawing's bounds (dagre's leave out edges routed around the nodes), in whole pixels: at
  // zoom 1 a unit of the drawing is exactly a pixel of the screen.
  const box = svg.getBBox();
  const [left, top] = [Math.floor(box.x) - 8, Math.floor(box.y) - 8];
  const [right, bottom] = [Math.ceil(box.x + box.width) + 8, Math.ceil(box.y + box.height) + 8];
  svg.setAttribute('viewBox', `${left} ${top} ${right - left} ${bottom - top}`);
  zoomGraph(svg, zoom);
}

/** Sets the drawn size of `svg`: its layout's size times `zoom`. */
export function zoomGraph(svg, zoom) {
  const [, , width, height] = svg.getAttribute('viewBox').split(' ').map(Number);
  svg.setAttribute('width', String(width * zoom));
  svg.setAttribute('height', String(height * zoom));
}

function nodeOf(name, node, definition, onSelect) {
  const type = definition.States[name].Type;
  const group = element('g', {
    class: `node ${node.mark} type-${type.toLowerCase()}`,
    'data-state': name,
    'data-members': node.members.join(' '),
    'data-mark': node.mark,
    transform: `translate(${node.x - node.width / 2},${node.y - node.height / 2})`,
    tabindex: 0,
    role: 'button',
  });
  const rx = type === 'Choice' ? 14 : 4;
  group.append(element('rect', { width: node.width, height: node.height, rx, ry: rx }));
  node.lines.forEach((line, index) => {
    const attributes = { x: node.width / 2, y: 6 + LINE_HEIGHT * (index + 0.75), 'text-anchor': 'middle' };
    group.append(element('text', { ...attributes, class: index === 0 ? 'label' : 'folded' }, line));
  });
  group.append(element('title', {}, `${node.members.join(', ')} (${type}): ${node.mark}`));
  group.addEventListener('click', () => onSelect(name));
  group.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' || event.key === ' ') onSelect(name);
  });
  return group;
}

/**
 * What the run did in each state, from its events: the last of entered (current), exited
 * (passed) or failed wins; a retried state that then exits is passed, a caught one failed, and
 * a Choice that sent the run into a Fail state failed with it (it did not pass the run on).
 * Once the run has ended nothing is current: the state it ended in is failed (a failed run) or
 * passed.
 */
export function stateMarks(events, runState) {
  const marks = {};
  // A caught failure still exits its state: it stays failed until the state is entered again.
  const caught = new Set();
  let previous;
  for (const event of events) {
    if (event.state === undefined) continue;
    const name = event.state.name;
    if (event.type === 'StateEntered') {
      marks[name] = 'current';
      caught.delete(name);
      if (event.state.type === 'Fail' && previous?.type === 'Choice') marks[previous.name] = 'failed';
      previous = event.state;
    } else if (event.type === 'StateCaught') {
      marks[name] = 'failed';
      caught.add(name);
    } else if (event.type === 'StateFailed') marks[name] = 'failed';
    else if (event.type === 'StateExited' && !caught.has(name)) marks[name] = 'passed';
  }
  if (runState !== 'running') {
    for (const [name, mark] of Object.entries(marks)) {
      if (mark === 'current') marks[name] = runState === 'succeeded' ? 'passed' : 'failed';
    }
  }
  return marks;
}

/** An SVG element with `attributes`, holding `text` if given. */
function element(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}
