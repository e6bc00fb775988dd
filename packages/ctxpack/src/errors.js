// How each ctxpack-error reads, as the core words it (ctxpack_core::Error::WORDING):
// `{name}` is the case's field of that WIT name, `{0}` its one string. Written by
// `cargo run -p ctxpack-codegen`: do not edit.
export const WORDING = {
  'invalid-field': 'invalid field `{field}`: {message}',
  'mandatory-over-budget': 'mandatory layer needs {mandatory-tokens} tokens but the budget is {budget}',
  'tokenizer-unavailable': 'tokenizer unavailable: {0}',
  'host-failed': 'host import `{capability}` failed: {message}',
  'step-mismatch': 'step mismatch: {0}',
};

/** The message a host writes for a capability it does not provide. */
export const NOT_PROVIDED = 'not provided by this host';

const kebab = (name) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const camel = (name) => name.replace(/-(.)/g, (_, c) => c.toUpperCase());

/**
 * The message of the error case `tag` (its WIT name, or camelCase) with
 * `value`, its payload: the one string, or an object of its fields in
 * camelCase or kebab-case.
 */
export function wording(tag, value) {
  const template = WORDING[kebab(String(tag))];
  if (template === undefined) return `${tag}: ${typeof value === 'string' ? value : JSON.stringify(value)}`;
  return template.replace(/\{([a-z0-9-]+)\}/g, (whole, name) => {
    if (name === '0') return String(value);
    const v = value?.[camel(name)] ?? value?.[name];
    return v === undefined ? whole : String(v);
  });
}
