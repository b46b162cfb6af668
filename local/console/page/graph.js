/**
 * The state machine's graph, drawn from the definition local mode runs: every state a node,
 * every Next, Default, Choice and Catch an edge, placed by dagre (its browser bundle, served
 * from node_modules as the global `dagre`) and drawn as SVG.
 */
const SVG = 'http://www.w3.org/2000/svg';
const NODE_HEIGHT = 30;
const CHAR_WIDTH = 7.2;

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
 * Draws `definition` into `svg`. `marks` maps a state's name to 'passed', 'current' or
 * 'failed'; `onSelect(name)` is called when a state is clicked.
 */
export function drawGraph(svg, definition, marks, onSelect) {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 14, ranksep: 34, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const [name, state] of Object.entries(definition.States)) {
    graph.setNode(name, {
      label: name,
      type: state.Type,
      width: name.length * CHAR_WIDTH + 28,
      height: NODE_HEIGHT,
    });
  }
  const edges = edgesOf(definition);
  for (const edge of edges) graph.setEdge(edge.from, edge.to, { kind: edge.kind });
  dagre.layout(graph);

  svg.replaceChildren();
  // dagre's own width leaves out edges routed around the nodes: take every point's bounds.
  const xs = [];
  const ys = [];
  for (const name of graph.nodes()) {
    const node = graph.node(name);
    xs.push(node.x - node.width / 2, node.x + node.width / 2);
    ys.push(node.y - node.height / 2, node.y + node.height / 2);
  }
  for (const edge of graph.edges()) {
    for (const point of graph.edge(edge).points) {
      xs.push(point.x);
      ys.push(point.y);
    }
  }
  const [left, top] = [Math.min(...xs) - 8, Math.min(...ys) - 8];
  svg.setAttribute('viewBox', `${left} ${top} ${Math.max(...xs) + 8 - left} ${Math.max(...ys) + 8 - top}`);
  svg.setAttribute('preserveAspectRatio', 'xMidYMin meet');
  const defs = element('defs');
  const marker = element('marker', {
    id: 'arrow',
    viewBox: '0 0 10 10',
    refX: 9,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: 'auto',
  });
  marker.append(element('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }));
  defs.append(marker);
  svg.append(defs);

  for (const edge of graph.edges()) {
    const { points, kind } = graph.edge(edge);
    const d = points.map((point, index) => `${index === 0 ? 'M' : 'L'}${point.x},${point.y}`).join(' ');
    const walked = marks[edge.v] !== undefined && marks[edge.w] !== undefined;
    svg.append(
      element('path', { d, class: `edge ${kind}${walked ? ' walked' : ''}`, 'marker-end': 'url(#arrow)' }),
    );
  }
  for (const name of graph.nodes()) {
    const node = graph.node(name);
    const mark = marks[name] ?? 'unreached';
    const group = element('g', {
      class: `node ${mark} type-${node.type.toLowerCase()}`,
      'data-state': name,
      'data-mark': mark,
      transform: `translate(${node.x - node.width / 2},${node.y - node.height / 2})`,
      tabindex: 0,
      role: 'button',
    });
    const rx = node.type === 'Choice' ? 14 : 4;
    group.append(element('rect', { width: node.width, height: node.height, rx, ry: rx }));
    const text = element('text', { x: node.width / 2, y: node.height / 2 + 4, 'text-anchor': 'middle' });
    text.textContent = name;
    group.append(text);
    const title = element('title');
    title.textContent = `${name} (${node.type}): ${mark}`;
    group.append(title);
    group.addEventListener('click', () => onSelect(name));
    group.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') onSelect(name);
    });
    svg.append(group);
  }
}

/**
 * What the run did in each state, from its events: the last of entered (current), exited
 * (passed) or failed wins; a retried state that then exits is passed, a caught one failed. Once the run has ended
 * nothing is current: the state it ended in is failed (a failed run) or passed.
 */
export function stateMarks(events, runState) {
  const marks = {};
  // A caught failure still exits its state: it stays failed until the state is entered again.
  const caught = new Set();
  for (const event of events) {
    if (event.state === undefined) continue;
    const name = event.state.name;
    if (event.type === 'StateEntered') {
      marks[name] = 'current';
      caught.delete(name);
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

function element(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}
