// Shared by details.bench.mjs and insert.bench.mjs: run in the page, it inserts each kind of
// element (HTML) into the last element matching `target`, forces the layout, and gives the
// median of 15 insertions per kind, one frame apart, in ms.
export async function insertionCosts({ kinds, target }) {
  const last = [...document.querySelectorAll(target)].pop();
  document.body.offsetHeight;
  const out = {};
  for (const [kind, html] of Object.entries(kinds)) {
    const times = [];
    for (let i = 0; i < 15; i += 1) {
      await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
      const start = performance.now();
      last.insertAdjacentHTML('beforeend', html);
      document.body.offsetHeight;
      times.push(performance.now() - start);
      last.lastElementChild.remove();
      document.body.offsetHeight;
    }
    out[kind] = times.sort((a, b) => a - b)[7].toFixed(1);
  }
  return Object.entries(out).map(([kind, ms]) => `${kind} ${ms} ms`).join(', ');
}
