// A force layout for the entity graph: springs along relations, repulsion between nearby
// nodes (a grid keeps it near linear), computed up front so the drawing is still.

export function layout(nodes, edges, {iterations = 250, distance = 90} = {}) {
  const n = nodes.length;
  const index = new Map(nodes.map((node, i) => [node, i]));
  const x = new Float64Array(n), y = new Float64Array(n);
  const golden = Math.PI * (3 - Math.sqrt(5));
  for (let i = 0; i < n; i++) {  // a sunflower start: deterministic and spread out
    const r = distance * Math.sqrt(i + 0.5) * 0.8;
    x[i] = r * Math.cos(i * golden);
    y[i] = r * Math.sin(i * golden);
  }
  const links = edges.map(([a, b]) => [index.get(a), index.get(b)]).filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  const cell = distance * 1.5;
  for (let step = 0; step < iterations; step++) {
    const heat = 1 - step / iterations;
    const dx = new Float64Array(n), dy = new Float64Array(n);
    const grid = new Map();
    for (let i = 0; i < n; i++) {
      const key = `${Math.floor(x[i] / cell)},${Math.floor(y[i] / cell)}`;
      if (!grid.has(key)) grid.set(key, []);
      grid.get(key).push(i);
    }
    for (let i = 0; i < n; i++) {
      const cx = Math.floor(x[i] / cell), cy = Math.floor(y[i] / cell);
      for (let gx = cx - 1; gx <= cx + 1; gx++) {
        for (let gy = cy - 1; gy <= cy + 1; gy++) {
          for (const j of grid.get(`${gx},${gy}`) || []) {
            if (j <= i) continue;
            let ex = x[i] - x[j], ey = y[i] - y[j];
            let d2 = ex * ex + ey * ey;
            if (d2 < 0.01) { ex = (i - j) * 0.1; ey = 0.1; d2 = ex * ex + ey * ey; }
            const force = distance * distance / d2;
            dx[i] += ex * force * 0.05; dy[i] += ey * force * 0.05;
            dx[j] -= ex * force * 0.05; dy[j] -= ey * force * 0.05;
          }
        }
      }
    }
    for (const [a, b] of links) {
      const ex = x[b] - x[a], ey = y[b] - y[a];
      const d = Math.sqrt(ex * ex + ey * ey) || 1;
      const pull = (d - distance) / d * 0.1;
      dx[a] += ex * pull; dy[a] += ey * pull;
      dx[b] -= ex * pull; dy[b] -= ey * pull;
    }
    const limit = distance * 0.5 * heat + 1;
    for (let i = 0; i < n; i++) {
      dx[i] -= x[i] * 0.002; dy[i] -= y[i] * 0.002;  // a little gravity keeps islands near
      const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]);
      const scale = d > limit ? limit / d : 1;
      x[i] += dx[i] * scale; y[i] += dy[i] * scale;
    }
  }
  return new Map(nodes.map((node, i) => [node, [x[i], y[i]]]));
}
