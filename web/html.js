// What every panel writes with: elements by id, escaped text, and the
// figures, ids and plurals the page shows numbers in.

export const $ = (id) => document.getElementById(id);

export function escapeHtml(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
}

/**
 * A figure and what it counts: every number the page shows is one of
 * these (or an id, or a table cell under its column's name).
 */
export function fig(label, value, unit = '') {
  const named = label ? `<span class="label">${escapeHtml(label)}</span> ` : '';
  return `<span class="fig">${named}<b>${escapeHtml(value)}</b>${unit ? ` ${escapeHtml(unit)}` : ''}</span>`;
}

/** An id, shown as such (its digits are not a figure). */
export function idHtml(id) {
  return `<code class="id">${escapeHtml(id)}</code>`;
}

export const plural = (n, one, many = `${one}s`) => (n === 1 ? one : many);
