// A snapshot's reasons in words, for index.js and chat.js.

import { REASONS } from './reasons.js';

const camel = (s) => s.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());

/**
 * Why a candidate was taken or dropped, in words: a snapshot entry's
 * `reason` explained as the WIT documents it, with what it carries.
 */
export function explainReason(reason) {
  const [name, value] = typeof reason === 'string' ? [camel(reason), undefined] : Object.entries(reason)[0];
  const doc = REASONS[name] ?? name;
  if (value === undefined) return doc;
  const what = name === 'overBudget' ? `needed ${value.needed}, ${value.remaining} remained`
    : typeof value === 'object' ? JSON.stringify(value) : value;
  return `${doc.replace(/\.$/, '')}: ${what}.`;
}
