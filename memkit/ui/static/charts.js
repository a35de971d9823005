// Small SVG charts, drawn here (no library): labels are SVG text nodes.

import {h, s} from './dom.js';

function figure(title, svg, empty) {
  return h('figure', {class: 'chart'}, h('figcaption', {}, title),
           empty ? h('p', {class: 'muted'}, empty) : svg);
}

/** Horizontal bars: rows = [[label, value, href?]]. */
export function bars(title, rows, {empty = 'Nothing yet.'} = {}) {
  const width = 420, rowHeight = 22, labelWidth = 150;
  const max = Math.max(1, ...rows.map(r => r[1]));
  const svg = s('svg', {viewBox: `0 0 ${width} ${rows.length * rowHeight + 4}`, role: 'img',
                        'aria-label': title, class: 'bars'});
  rows.forEach(([label, value, href], i) => {
    const y = i * rowHeight + 2;
    const size = Math.max(2, (width - labelWidth - 50) * value / max);
    const text = s('text', {x: labelWidth - 6, y: y + 15, 'text-anchor': 'end', class: 'label'},
                   String(label).length > 22 ? `${String(label).slice(0, 21)}…` : String(label));
    const row = s('g', {}, s('title', {}, `${label}: ${value}`), text,
                  s('rect', {x: labelWidth, y: y + 3, width: size, height: rowHeight - 6, rx: 2}),
                  s('text', {x: labelWidth + size + 5, y: y + 15, class: 'value'}, String(value)));
    svg.append(href ? s('a', {href}, row) : row);
  });
  return figure(title, svg, rows.length ? null : empty);
}

/** Vertical bars over labelled bins (the confidence histogram). */
export function columns(title, values, labels) {
  const width = 420, height = 150, bottom = 20;
  const max = Math.max(1, ...values);
  const step = width / values.length;
  const svg = s('svg', {viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': title, class: 'columns'});
  values.forEach((value, i) => {
    const size = (height - bottom - 14) * value / max;
    svg.append(s('g', {}, s('title', {}, `${labels[i]}: ${value}`),
      s('rect', {x: i * step + 3, y: height - bottom - size, width: step - 6, height: Math.max(size, 0.5)}),
      s('text', {x: i * step + step / 2, y: height - bottom - size - 3, 'text-anchor': 'middle', class: 'value'},
        value ? String(value) : ''),
      s('text', {x: i * step + step / 2, y: height - 5, 'text-anchor': 'middle', class: 'label'}, labels[i])));
  });
  return figure(title, svg, values.some(Boolean) ? null : 'Nothing yet.');
}

/** The running total of a per-day count ({'YYYY-MM-DD': n}) as a line. */
export function growth(title, perDay) {
  const days = Object.keys(perDay).sort();
  const width = 420, height = 150, pad = 28;
  let total = 0;
  const points = days.map(day => [Date.parse(day), total += perDay[day]]);
  const svg = s('svg', {viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': title, class: 'growth'});
  if (points.length) {
    const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 86400000);
    const x = t => pad + (width - 2 * pad) * (t - t0) / (t1 - t0);
    const y = v => height - pad - (height - 2 * pad) * v / total;
    const line = [[pad, height - pad], ...points.map(([t, v]) => [x(t), y(v)])];
    if (points.length === 1) line.push([width - pad, y(total)]);
    svg.append(
      s('polyline', {points: line.map(p => p.map(n => n.toFixed(1)).join(',')).join(' ')}),
      s('text', {x: pad, y: height - 8, class: 'label'}, days[0]),
      s('text', {x: width - pad, y: height - 8, 'text-anchor': 'end', class: 'label'}, days[days.length - 1]),
      s('text', {x: width - pad, y: y(total) - 6, 'text-anchor': 'end', class: 'value'}, String(total)));
  }
  return figure(title, svg, points.length ? null : 'Nothing yet.');
}
