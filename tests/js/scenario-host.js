// The stores of a scenario file for the JavaScript hosts: the npm
// package's tests, the browser's corpus page, and the playground, which
// serves this file and edits scenarios live. It is the Rust scenario host
// (crates/ctxpack-scenario/src/stores.rs) over again, and
// hosts/jco/test/scenario-host.test.js holds it to the Rust host's
// recorded answers, call for call; the jco and Python harnesses replay
// those recordings instead (replay-host.js).

const enc = new TextEncoder();
const bytes = (s) => enc.encode(s).length;

const NOT_PROVIDED = 'not provided by this host';

/**
 * The scenario host's count: one token a run of characters between ASCII
 * spaces, tabs, line feeds and carriage returns (stores.rs `words`).
 */
export function words(text) {
  return text.split(/[ \t\n\r]/).filter(Boolean).length;
}

/** The leading words that fit in `max` bytes of UTF-8. */
export function leadingWords(text, max) {
  let out = '';
  for (const word of text.split(/\s+/u).filter(Boolean)) {
    if (bytes(out) + bytes(word) + 1 > max) break;
    out = out ? `${out} ${word}` : word;
  }
  return out;
}

/**
 * The stores of a scenario file (its `host` key), as a JavaScript host's
 * callbacks: what crates/ctxpack-scenario/src/stores.rs answers, call for
 * call, counted. `HostError` is the host's error for a failed call;
 * `spell` spells the candidates' keys as the host hands them over (as the
 * file does, by default); with `delay` set, every answer is a Promise that
 * settles after that many milliseconds (0: a macrotask later).
 */
// A store the file leaves out, or writes as null (as a scenario written by
// serde does), is one this host does not provide.
/** The package's source callbacks and the capabilities they stand for. */
const SOURCES = [
  ['retrieve', 'sources.retrieve'],
  ['expandGraph', 'sources.expand-graph'],
  ['recallMemory', 'sources.recall-memory'],
  ['repositoryState', 'sources.repository-state'],
];

export class ScenarioHost {
  constructor(answers, { HostError, spell = (v) => v, delay = null }) {
    this.answers = answers ?? {};
    this.HostError = HostError;
    this.spell = spell;
    this.delay = delay;
    this.calls = {};
  }

  later(f) {
    if (this.delay === null) return f();
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        try {
          resolve(f());
        } catch (e) {
          reject(e);
        }
      }, this.delay);
    });
  }

  count(name) {
    this.calls[name] = (this.calls[name] || 0) + 1;
  }

  source(name, key, limit) {
    this.count(name);
    return this.later(() => {
      const answer = this.answers[key];
      if (answer == null) throw new this.HostError(NOT_PROVIDED);
      const [kind, value] = Object.entries(answer)[0];
      if (kind === 'error') throw new this.HostError(value);
      const items = kind === 'items' && limit !== undefined ? value.slice(0, limit) : value;
      return this.spell(items);
    });
  }

  /**
   * This host as a builder's callbacks when its profile calls `sources`
   * (capabilities, the package's `PROFILES[builder.profile]`): the policy,
   * the summariser, the counter and those sources — a source the profile never calls
   * is refused by the package.
   */
  lend(sources) {
    const lent = {
      review: (...args) => this.review(...args),
      summarize: (...args) => this.summarize(...args),
      countTokens: (...args) => this.countTokens(...args),
    };
    for (const [name, capability] of SOURCES) {
      if (sources.includes(capability)) lent[name] = (...args) => this[name](...args);
    }
    return lent;
  }

  retrieve(_c, _q, limit) { return this.source('sources.retrieve', 'retrieve', limit); }

  expandGraph() { return this.source('sources.expand-graph', 'expand-graph'); }

  recallMemory(_c, _u, _q, limit) { return this.source('sources.recall-memory', 'recall-memory', limit); }

  repositoryState() { return this.source('sources.repository-state', 'repository-state'); }

  review(_c, items) {
    this.count('policy.review');
    return this.later(() => {
      const rules = this.answers.policy;
      if (rules == null) throw new this.HostError(NOT_PROVIDED);
      if (rules.error != null) throw new this.HostError(rules.error);
      const deny = rules.deny || {};
      const redact = rules.redact || {};
      let verdicts = items.map((c) => (c.id in deny ? { deny: deny[c.id] }
        : c.id in redact ? { redact: redact[c.id] } : 'allow'));
      if (rules.verdicts != null) {
        verdicts = verdicts.concat(Array(rules.verdicts).fill('allow')).slice(0, rules.verdicts);
      }
      return verdicts;
    });
  }

  summarize(requests) {
    this.count('summarizer.summarize');
    return this.later(() => {
      const rule = this.answers.summarizer;
      if (rule == null) throw new this.HostError(NOT_PROVIDED);
      const words = requests.map((r) => leadingWords(r.text, (r.targetTokens ?? r['target-tokens']) * 4));
      if (rule === 'leading-words') return words;
      if (rule === 'too-few') return words.slice(1);
      if (rule === 'too-many') return words.concat(['one too many']);
      const [kind, value] = Object.entries(rule)[0];
      if (kind === 'error') throw new this.HostError(value);
      return requests.map(() => value);
    });
  }

  countTokens(_tokenizer, texts) {
    this.count('counter.count-tokens');
    return this.later(() => {
      const rule = this.answers.counter;
      if (rule == null) throw new this.HostError(NOT_PROVIDED);
      if (rule === 'words') return texts.map(words);
      if (rule === 'too-few') return texts.slice(1).map(words);
      throw new this.HostError(rule.error);
    });
  }
}
