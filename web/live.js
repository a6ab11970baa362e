// Live traffic: the audit stream as it happens (server-sent events), filters, a chart of calls,
// denials and held calls per minute, and the hash chain's verification.
import { api, decisionBadge, failure, h, replace, shown, table, time } from './ui.js';

const MAX_ROWS = 500;

const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/** Calls, denials and held calls per minute, with a calls-per-minute scale on the left and clock times below. */
function chart(buckets) {
  const w = 600;
  const hgt = 140;
  const max = Math.max(1, ...buckets.map((b) => b.calls));
  const x = (i) => (buckets.length <= 1 ? 0 : (i / (buckets.length - 1)) * w);
  const y = (v) => hgt - (v / max) * (hgt - 8);
  const svgEl = (tag, attrs) => {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    return el;
  };
  const line = (key) => svgEl('polyline', { class: key, points: buckets.map((b, i) => `${x(i).toFixed(1)},${y(b[key]).toFixed(1)}`).join(' ') });
  const svg = svgEl('svg', { viewBox: `0 0 ${w} ${hgt}`, preserveAspectRatio: 'none', class: 'chart', role: 'img' });
  const total = (key) => buckets.reduce((s, b) => s + b[key], 0);
  svg.setAttribute('aria-label', `last hour: ${total('calls')} calls, ${total('denied')} denied, ${total('held')} held; at most ${max} calls in a minute`);
  const ticks = [...new Set([max, Math.round(max / 2), 0])];
  svg.append(...ticks.filter((v) => v > 0).map((v) => svgEl('line', { class: 'grid', x1: 0, x2: w, y1: y(v), y2: y(v) })),
    svgEl('line', { class: 'axis', x1: 0, x2: w, y1: hgt, y2: hgt }), svgEl('line', { class: 'axis', x1: 0, x2: 0, y1: 0, y2: hgt }),
    line('calls'), line('denied'), line('held'));
  // Labels are HTML beside the drawing (the drawing stretches to its box; text in it would too).
  // Positions through the CSSOM: the dashboard's CSP refuses style attributes.
  const at = (el, prop, percent) => { el.style[prop] = `${percent.toFixed(2)}%`; return el; };
  const yAxis = h('div', { class: 'y-axis', 'aria-hidden': 'true' }, ticks.map((v) => at(h('span', {}, String(v)), 'top', (y(v) / hgt) * 100)));
  const marks = buckets.length ? [...new Set([0, Math.floor((buckets.length - 1) / 2), buckets.length - 1])] : [];
  const xAxis = h('div', { class: 'x-axis', 'aria-hidden': 'true' }, marks.map((i) => at(h('span', {
    class: i === 0 ? 'first' : i === buckets.length - 1 ? 'last' : '',
  }, clock(buckets[i].t)), 'left', (x(i) / w) * 100)));
  return h('div', { class: 'chart-box' }, h('span', { class: 'y-title', 'aria-hidden': 'true' }, 'calls / min'), yAxis, svg, h('span'), xAxis);
}

export async function render(view) {
  const [servers, backlog, traffic] = await Promise.all([api('/api/servers'), api('/api/audit?limit=200'), api('/api/traffic?since=1h&bucket=1m')]);
  const events = backlog.filter((r) => r.kind === 'call' || r.decision).reverse();
  const buckets = traffic;

  const field = (id, label, control) => h('div', { class: 'field' }, h('label', { for: id }, label), control);
  const filters = {
    server: h('select', { id: 'f-server' }, h('option', { value: '' }, 'all servers'), servers.map((s) => h('option', { value: s.name }, s.name))),
    grant: h('input', { id: 'f-grant', type: 'search', placeholder: 'any grant', autocomplete: 'off' }),
    tool: h('input', { id: 'f-tool', type: 'search', placeholder: 'any tool', autocomplete: 'off' }),
    decision: h('select', { id: 'f-decision' }, ['', 'allow', 'deny', 'shadow_deny', 'approval_requested', 'approved', 'rejected', 'timeout', 'unused', 'error'].map((d) => h('option', { value: d }, d || 'any decision'))),
  };
  const matches = (e) => (!filters.server.value || e.server === filters.server.value)
    && (!filters.grant.value || (e.grant_label ?? '').includes(filters.grant.value.trim()))
    && (!filters.tool.value || (e.tool ?? '').includes(filters.tool.value.trim()))
    && (!filters.decision.value || e.decision === filters.decision.value);

  const rowsBox = h('div', { id: 'live-rows' });
  const chartBox = h('div', {});
  const state = h('span', { class: 'muted', id: 'stream-state' }, 'connecting…');
  const verifyBox = h('span', { id: 'verify-status' }, 'checking…');

  const draw = () => {
    const visible = events.filter(matches).slice(0, 200);
    replace(rowsBox, table(['time', 'tool', 'decision', 'grant', '·server', 'rule', '·message'], visible.map((e) => h('tr', {},
      h('td', {}, time(e.ts)), h('td', { class: 'wrap' }, shown(e.tool ?? e.kind)), h('td', {}, decisionBadge(e.decision)), h('td', { class: 'wrap' }, e.grant_label ? shown(e.grant_label) : '—'),
      h('td', { class: 'hide-phone' }, e.server ? shown(e.server) : '—'), h('td', { class: 'mono wrap' }, e.rule ? shown(e.rule) : '—'), h('td', { class: 'wrap hide-phone' }, shown(e.message ?? '')))),
    { empty: events.length ? 'No event matches the filters.' : 'No calls yet: they appear here as they happen.' }));
  };
  const drawChart = () => replace(chartBox, chart(buckets));
  for (const f of Object.values(filters)) f.addEventListener('input', draw);

  const verify = async () => {
    replace(verifyBox, 'checking…');
    try {
      const v = await api('/api/audit/verify');
      replace(verifyBox, v.ok ? h('span', { class: 'ok' }, `✓ audit verify: ${v.rows} rows, chain intact`) : h('span', { class: 'error' }, `✗ audit verify failed: ${v.problem}`));
    } catch (err) { replace(verifyBox, failure(err)); }
  };

  replace(view,
    h('h1', {}, 'Live traffic'),
    h('div', { class: 'banner' }, verifyBox, h('button', { type: 'button', class: 'ghost small', onclick: verify }, 'Verify again')),
    h('section', { 'aria-labelledby': 'chart-title' }, h('h2', { id: 'chart-title' }, 'Calls per minute, last hour'), chartBox,
      h('div', { class: 'legend' }, h('span', { class: 'calls' }, 'calls'), h('span', { class: 'denied' }, 'denied'), h('span', { class: 'held' }, 'held'))),
    h('h2', {}, 'Events ', state),
    h('div', { class: 'filters', role: 'search', 'aria-label': 'Filter events' }, field('f-server', 'Server', filters.server), field('f-grant', 'Grant', filters.grant), field('f-tool', 'Tool', filters.tool), field('f-decision', 'Decision', filters.decision)),
    rowsBox);
  draw();
  drawChart();
  verify();

  const source = new EventSource('/api/audit/stream');
  source.onopen = () => replace(state, '· live');
  source.onerror = () => replace(state, '· reconnecting…');
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    if (e.kind !== 'call' && !e.decision) return;
    events.unshift(e);
    if (events.length > MAX_ROWS) events.length = MAX_ROWS;
    if (e.kind === 'call' || e.kind === 'approval') {
      const minute = new Date(Math.floor(Date.parse(e.ts) / 60_000) * 60_000).toISOString();
      let last = buckets[buckets.length - 1];
      if (!last || last.t < minute) { last = { t: minute, calls: 0, denied: 0, held: 0 }; buckets.push(last); if (buckets.length > 61) buckets.shift(); }
      if (e.kind === 'approval') { if (e.decision === 'approval_requested') last.held++; }
      else {
        last.calls++;
        if (e.decision === 'deny') last.denied++;
      }
      drawChart();
    }
    draw();
  };
  return () => source.close();
}
