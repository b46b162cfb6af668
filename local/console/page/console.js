/**
 * The console's page: the run list (#/) and one run (#/run/<id>), drawn at once from the state
 * the server put into the page, kept current by its event stream, and drops from a chosen or
 * dragged folder. Text goes into the page through textContent only: drop names and messages
 * are the user's.
 */
import { drawGraph, stateMarks, zoomGraph } from './graph.js';

const PAGE_SIZE = 50;
/** How long the page waits for a dropped folder's run to start before it says so. */
const START_WAIT_MS = 30_000;

const $ = (selector) => document.querySelector(selector);

/** What the server knew when it sent the page: overview, definition, errors, runs, service. */
const initial = JSON.parse($('#initial-state').textContent);
const { definition, errors } = initial;
const view = { filter: '', offset: 0, runId: null, selected: null, detail: null, compact: true, zoom: 1 };

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  // append() puts anything but a node in as text.
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/** The JSON answer to `path` (asked with `init`), or an error with the message of a refusal. */
async function fetchJson(path, init = {}) {
  const response = await fetch(path, { headers: { accept: 'application/json' }, ...init });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ?? `${path}: HTTP ${response.status}`);
  return body;
}

function elapsed(run) {
  const end = run.finishedAt === null ? Date.now() : Date.parse(run.finishedAt);
  const seconds = Math.max(0, (end - Date.parse(run.startedAt)) / 1000);
  return seconds < 120
    ? `${seconds.toFixed(1)} s`
    : `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

function badge(state) {
  return el('span', { class: `badge ${state}`, 'data-run-state': state }, state);
}

// ---- The run list ------------------------------------------------------------------------

/** The run list: `page` when given (the page's initial state), else asked for. */
async function showRuns(page, service) {
  // state= (no filter) lists runs in every state.
  const query = new URLSearchParams({ offset: view.offset, limit: PAGE_SIZE, state: view.filter });
  page ??= await fetchJson(`/api/runs?${query}`);
  const counts = Object.entries(page.counts);
  $('#filters').replaceChildren(
    filterButton('', `all (${counts.reduce((sum, [, count]) => sum + count, 0)})`),
    ...counts.map(([state, count]) => filterButton(state, `${state} (${count})`)),
  );
  const rows = page.runs.map((run) => {
    const advice = run.error === null ? undefined : errors[run.error.code];
    return el(
      'tr',
      { 'data-run-id': run.runId, 'data-drop': run.drop, class: `run ${run.state}` },
      el('td', {}, el('a', { href: `#/run/${encodeURIComponent(run.runId)}` }, run.drop)),
      el('td', { class: 'started' }, run.startedAt.replace('T', ' ').slice(0, 19)),
      el(
        'td',
        { class: 'run-id', title: run.runId },
        el('code', {}, run.runId.split('-').at(-1).slice(0, 12)),
      ),
      el('td', {}, badge(run.state)),
      ...[run.currentState, run.step, run.nextAction].map((cell) => el('td', {}, cell ?? '—')),
      el(
        'td',
        { class: 'elapsed', 'data-started': run.startedAt, 'data-finished': run.finishedAt ?? '' },
        elapsed(run),
      ),
      el('td', {}, run.attempts),
      el(
        'td',
        { class: 'error-cell' },
        run.error === null
          ? ''
          : el(
              'div',
              {},
              el('code', { class: 'error-code' }, run.error.code),
              ' ',
              el('span', { class: 'error-message' }, run.error.message),
              advice === undefined ? null : el('div', { class: 'todo' }, `What to do: ${plain(advice.todo)}`),
            ),
      ),
    );
  });
  if (rows.length === 0)
    rows.push(el('tr', {}, el('td', { colspan: 10, class: 'muted' }, 'No runs yet: drop a folder above.')));
  $('#runs-table tbody').replaceChildren(...rows);
  const last = Math.min(page.offset + page.runs.length, page.total);
  $('#page-info').textContent = page.total === 0 ? '' : `${page.offset + 1}–${last} of ${page.total}`;
  $('#prev-page').disabled = page.offset === 0;
  $('#next-page').disabled = last >= page.total;
  await showService(service).catch(() => undefined);
}

function filterButton(state, label) {
  const onclick = () => go({ filter: state, offset: 0 });
  const active = view.filter === state ? 'active' : '';
  return el('button', { type: 'button', class: active, 'data-filter': state, onclick }, label);
}

/** The service's side: `service` when given (null: not simulated), else asked for. */
async function showService(service) {
  if (service === undefined) service = await fetchJson('/api/service').catch(() => null);
  const section = $('#service');
  section.hidden = service === null;
  if (service === null) return;
  $('#service-summary').textContent = `${service.url} — credits left: ${service.credits}`;
  for (const kind of ['datasets', 'models']) {
    const rows = service[kind].map((record) =>
      el(
        'tr',
        { 'data-service-id': record.id },
        ...[el('code', {}, record.id), record.name, record.status, record.step, record.next_action].map(
          (cell) => el('td', {}, cell),
        ),
      ),
    );
    $(`#service-${kind} tbody`).replaceChildren(...rows);
  }
}

// ---- One run -----------------------------------------------------------------------------

async function showRun(runId) {
  const detail = await fetchJson(`/api/runs/${encodeURIComponent(runId)}`);
  view.detail = detail;
  const { summary } = detail;
  $('#run-title').replaceChildren(summary.drop, ' ', badge(summary.state));
  $('#run-summary').textContent =
    `run ${summary.runId} · started ${summary.startedAt} · ${elapsed(summary)}` +
    (summary.step === null ? '' : ` · step ${summary.step}, next_action ${summary.nextAction}`) +
    ` · attempts ${summary.attempts}` +
    (summary.source === 'status'
      ? ' · from its status file (run by an earlier local mode; no history kept)'
      : '');

  const errorBox = $('#run-error');
  errorBox.hidden = summary.error === null;
  if (summary.error !== null) {
    errorBox.replaceChildren(
      el('p', {}, el('strong', {}, 'Error '), el('code', { id: 'error-code' }, summary.error.code)),
      el('p', { id: 'error-message' }, summary.error.message),
      detail.advice === null ? null : el('p', { id: 'error-meaning' }, plain(detail.advice.meaning)),
      detail.advice === null
        ? null
        : el('p', { id: 'error-todo' }, el('strong', {}, 'What to do: '), plain(detail.advice.todo)),
    );
  }

  showGraph();
  showStateIo();
  showHistory(detail.events);
  $('#status-file').textContent =
    detail.status === null ? '(none for this run)' : JSON.stringify(detail.status, null, 2);
  showModel(detail);
}

function showGraph() {
  const { events, summary } = view.detail;
  const options = { compact: view.compact, zoom: view.zoom, onSelect: selectState };
  drawGraph($('#graph'), definition, stateMarks(events, summary.state), options);
  for (const button of document.querySelectorAll('[data-graph]'))
    button.classList.toggle('active', (button.dataset.graph === 'compact') === view.compact);
}

function selectState(name) {
  view.selected = name;
  showStateIo();
}

/** The selected state's input and output, from its latest entered and exited events. */
function showStateIo() {
  const name = view.selected;
  const events = view.detail?.events ?? [];
  $('#state-io').hidden = name === null;
  if (name === null) return;
  let input;
  let output;
  for (const event of events) {
    if (event.state?.name !== name) continue;
    if (event.type === 'StateEntered') {
      input = event.state.input;
      output = undefined;
    } else if (event.type === 'StateExited') output = event.state.output;
  }
  $('#state-io-title').textContent = name;
  $('#state-input').textContent =
    input === undefined ? '(the run did not enter this state)' : JSON.stringify(input, null, 2);
  $('#state-output').textContent =
    output === undefined ? '(no output: not exited)' : JSON.stringify(output, null, 2);
}

function showHistory(events) {
  const start = events[0]?.timestamp ?? 0;
  const rows = events.map((event, index) =>
    el(
      'tr',
      {
        class: `event ${event.type}`,
        'data-state': event.state?.name ?? '',
        onclick: event.state === undefined ? undefined : () => selectState(event.state.name),
      },
      el('td', {}, index + 1),
      el('td', { class: 'time' }, `+${((event.timestamp - start) / 1000).toFixed(3)} s`),
      el('td', {}, event.type),
      el('td', {}, event.state?.name ?? ''),
      el('td', {}, eventDetail(event)),
    ),
  );
  $('#history tbody').replaceChildren(...rows);
}

function eventDetail(event) {
  if (event.type === 'StateRetried') return `retry ${event.retry.attempt}`;
  if (event.type === 'StateCaught') return 'caught: on to the report';
  if (event.failure !== undefined) return event.failure;
  if (event.type === 'StateEntered' && event.state.type === 'Wait') {
    const record = event.state.input?.model ?? event.state.input?.dataset;
    return record?.waitSeconds === undefined ? 'wait' : `wait ${record.waitSeconds} s`;
  }
  if (event.type === 'StateExited' && event.state.type === 'Task') {
    const record = event.state.output?.model ?? event.state.output?.dataset;
    return record === undefined ? '' : `step ${record.step}, next_action ${record.nextAction}`;
  }
  return '';
}

function showModel(detail) {
  $('#model').hidden = detail.model === null || detail.record === null;
  if ($('#model').hidden) return;
  const { model, cost, run } = detail.record;
  const facts = [
    ['model', model.id],
    ['holdout_n', model.holdout_n],
    ['onnx_bytes', model.onnx_bytes],
    ['cost', `${cost.credits} credit · GPU $${cost.gpu_usd ?? '?'} · JEV $${cost.jev_usd ?? '?'}`],
    ['attempts', run.attempts],
    ['labelled', run.labelled],
  ];
  $('#model-facts').replaceChildren(
    ...facts.flatMap(([name, value]) => [el('dt', {}, name), el('dd', { 'data-fact': name }, value ?? '—')]),
  );
  const metrics = Object.entries(model.metrics ?? {}).map(([name, value]) =>
    el('tr', { 'data-metric': name }, el('td', {}, name), el('td', {}, JSON.stringify(value))),
  );
  $('#metrics tbody').replaceChildren(...metrics);
  showComparison(detail.record);
  $('#download-onnx').href = `/api/download?key=${encodeURIComponent(detail.model.onnxKey)}`;
  $('#download-json').href = `/api/download?key=${encodeURIComponent(detail.model.recordKey)}`;
}

/** The drop's previous model beside this one, metric by metric, and whether this one was promoted. */
function showComparison({ model, previous, promotion }) {
  const promoted = promotion?.promoted ? 'Promoted to' : 'Not promoted to';
  $('#promotion').textContent = promotion ? `${promoted} the drop's current model: ${promotion.reason}.` : '';
  $('#comparison').hidden = !previous;
  if (!previous) return;
  $('#comparison caption').textContent =
    `Previous model ${previous.model_id} (${previous.encoder}, ${previous.created_at})`;
  const rows = Object.entries(previous.differences).map(([name, difference]) =>
    el(
      'tr',
      { 'data-compare': name },
      ...[name, model.metrics[name], previous.metrics[name]].map((cell) => el('td', {}, cell)),
      el('td', {}, `${difference >= 0 ? '+' : ''}${difference}`),
    ),
  );
  $('#comparison tbody').replaceChildren(...rows);
}

/** Markdown code spans as plain text. */
function plain(markdown) {
  return markdown.replaceAll('`', '');
}

// ---- Drops -------------------------------------------------------------------------------

/** Uploads `files` ({ name relative to the folder, file }) as the drop `drop`, train.json last. */
async function dropFolder(drop, files) {
  const message = $('#drop-message');
  message.className = '';
  message.textContent = `Checking ${drop}…`;
  const runsOfDrop = async () =>
    (await fetchJson(`/api/runs?drop=${encodeURIComponent(drop)}&limit=200`)).runs;
  try {
    // Names and sizes, and train.json's bytes: what the server judges by the run's rules.
    const trainJson = files.find((entry) => entry.name === 'train.json')?.file;
    const checked = await fetchJson('/api/drops/check', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        drop,
        files: files.map((entry) => ({ name: entry.name, bytes: entry.file.size })),
        // Its bytes as numbers (a larger file than a train.json may be, 1 MiB, is refused by its size).
        trainJson: trainJson?.size <= 1024 * 1024 ? [...new Uint8Array(await trainJson.arrayBuffer())] : [],
      }),
    });
    const before = new Set((await runsOfDrop()).map((run) => run.runId));
    const ordered = files.toSorted(
      (a, b) => Number(a.name === 'train.json') - Number(b.name === 'train.json'),
    );
    for (const [index, entry] of ordered.entries()) {
      message.textContent = `Uploading ${drop}/${entry.name} (${index + 1} of ${ordered.length}) to ${checked.prefix}`;
      const url = `/api/drops/${encodeURIComponent(drop)}/files?name=${encodeURIComponent(entry.name)}`;
      await fetchJson(url, { method: 'PUT', body: entry.file });
    }
    message.textContent = `Dropped ${drop} (${ordered.length} files): waiting for its run to start…`;
    const deadline = Date.now() + START_WAIT_MS;
    while (Date.now() < deadline) {
      const started = (await runsOfDrop()).find((run) => !before.has(run.runId));
      if (started !== undefined) {
        message.textContent = `Dropped ${drop}: run ${started.runId} started.`;
        location.hash = `#/run/${encodeURIComponent(started.runId)}`;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    throw new Error(`${drop} was uploaded but no run started within ${START_WAIT_MS / 1000} s`);
  } catch (error) {
    showError(error.message);
  }
}

function showError(text) {
  $('#drop-message').className = 'error';
  $('#drop-message').textContent = text;
}

/** A folder chosen with the file input: every file's path starts with the folder's name. */
function dropChosen(fileList) {
  const files = [...fileList];
  if (files.length === 0) return;
  const drop = files[0].webkitRelativePath.split('/')[0];
  void dropFolder(
    drop,
    files.map((file) => ({ name: file.webkitRelativePath.split('/').slice(1).join('/'), file })),
  );
}

/** A folder dragged onto the page, walked through its entries. */
async function dropDragged(items) {
  const entry = items[0]?.webkitGetAsEntry?.();
  if (entry === null || entry === undefined || !entry.isDirectory) {
    showError('Drop a folder (the one holding the data files and train.json), not a file.');
    return;
  }
  const files = [];
  const walk = async (directory, prefix) => {
    const reader = directory.createReader();
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (batch.length === 0) return;
      for (const child of batch) {
        if (child.isDirectory) await walk(child, `${prefix}${child.name}/`);
        else
          files.push({
            name: `${prefix}${child.name}`,
            file: await new Promise((resolve, reject) => child.file(resolve, reject)),
          });
      }
    }
  };
  await walk(entry, '');
  await dropFolder(entry.name, files);
}

// ---- Wiring ------------------------------------------------------------------------------

async function refresh(known = {}) {
  const match = /^#\/run\/(.+)$/.exec(location.hash);
  const runId = match === null ? null : decodeURIComponent(match[1]);
  if (runId !== view.runId) view.selected = null;
  view.runId = runId;
  $('#runs-view').hidden = runId !== null;
  $('#run-view').hidden = runId === null;
  try {
    if (runId === null) await showRuns(known.runs, known.service);
    else await showRun(runId);
  } catch (error) {
    showError(error.message);
  }
}

/** Changes the view (a filter, a page of the run list) and shows it. */
function go(change) {
  Object.assign(view, change);
  void refresh();
}

let pending = null;
function refreshSoon() {
  pending ??= setTimeout(() => {
    pending = null;
    void refresh();
  }, 100);
}

/** Each table's header row, from the column names its markup lists in data-head, and its body. */
function headTables() {
  for (const table of document.querySelectorAll('table[data-head]')) {
    const names = table.dataset.head.split('|');
    table.createTHead().append(el('tr', {}, ...names.map((name) => el('th', {}, name))));
    table.createTBody();
  }
}

function start() {
  headTables();
  const { overview } = initial;
  $('#overview').textContent =
    `bucket s3://${overview.bucket} at ${overview.s3Endpoint} · training service ${overview.serviceUrl}` +
    (overview.simulated ? ' (simulated)' : '') +
    (overview.dataDir === null ? ' · state in a temporary folder' : ` · state kept in ${overview.dataDir}`);
  $('.graph-tools').addEventListener('click', ({ target: { dataset } }) => {
    if (dataset.zoom !== undefined) setZoom(dataset.zoom === '1' ? 1 : view.zoom * Number(dataset.zoom));
    if (dataset.graph === undefined || view.detail === null) return;
    view.compact = dataset.graph === 'compact';
    showGraph();
    const frame = $('#graph-frame');
    frame.scrollTo((frame.scrollWidth - frame.clientWidth) / 2, 0);
  });
  panWithPointer($('#graph-frame'));
  $('#prev-page').addEventListener('click', () => go({ offset: Math.max(0, view.offset - PAGE_SIZE) }));
  $('#next-page').addEventListener('click', () => go({ offset: view.offset + PAGE_SIZE }));
  $('#folder-input').addEventListener('change', (event) => {
    dropChosen(event.target.files);
    event.target.value = '';
  });
  const zone = document.body;
  zone.addEventListener('dragover', (event) => {
    event.preventDefault();
    $('#dropzone').classList.add('over');
  });
  zone.addEventListener('dragleave', () => $('#dropzone').classList.remove('over'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    $('#dropzone').classList.remove('over');
    void dropDragged([...event.dataTransfer.items]);
  });
  window.addEventListener('hashchange', () => void refresh());
  const events = new EventSource('/api/events');
  // What changed between the page's state and the stream's start (or a reconnection) is asked for.
  events.addEventListener('open', refreshSoon);
  events.addEventListener('runs', (event) => {
    const { runIds } = JSON.parse(event.data);
    if (view.runId === null || runIds.includes(view.runId)) refreshSoon();
  });
  setInterval(() => {
    for (const cell of document.querySelectorAll('td.elapsed')) {
      if (cell.dataset.finished !== '') continue;
      cell.textContent = elapsed({ startedAt: cell.dataset.started, finishedAt: null });
    }
  }, 1000);
  // Drawn before the first await: the page shows the runs as it loads.
  void refresh(initial).then(() => {
    document.body.dataset.ready = 'true';
  });
}

/** Zooms the graph about the middle of its frame. */
function setZoom(wanted) {
  const frame = $('#graph-frame');
  const zoom = Math.min(3, Math.max(0.3, wanted));
  const ratio = zoom / view.zoom;
  const [x, y] = [frame.scrollLeft + frame.clientWidth / 2, frame.scrollTop + frame.clientHeight / 2];
  view.zoom = zoom;
  zoomGraph($('#graph'), zoom);
  frame.scrollTo(x * ratio - frame.clientWidth / 2, y * ratio - frame.clientHeight / 2);
}

/** Dragging the graph's frame scrolls it (a click on a state still selects it). */
function panWithPointer(frame) {
  frame.addEventListener('pointerdown', (down) => {
    if (down.target.closest('.node') !== null) return;
    const from = { x: down.clientX + frame.scrollLeft, y: down.clientY + frame.scrollTop };
    const move = (event) => frame.scrollTo(from.x - event.clientX, from.y - event.clientY);
    frame.setPointerCapture(down.pointerId);
    frame.addEventListener('pointermove', move);
    frame.addEventListener('lostpointercapture', () => frame.removeEventListener('pointermove', move), {
      once: true,
    });
  });
}

start();
