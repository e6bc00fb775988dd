// What the playground says of a snapshot, read off the snapshot alone: the
// counts the budget header and the candidates table share, each host
// candidate's rank in its section and the score digits that order them,
// the ids answered more than once and by which call, why the fill passed
// over a candidate for a lower-ranked one, and which message carries each
// pack entry. No DOM here: app.js renders what these functions return.

/** The call that produced a candidate of each origin. */
export const CALL_OF = {
  request: 'the request',
  retrieval: 'sources.retrieve',
  memory: 'sources.recall-memory',
  graph: 'sources.expand-graph',
  repository: 'sources.repository-state',
  summary: 'summarizer.summarize',
};

/** The ids an entry stands for: its own, or every member of its run. */
export function memberIds(entry) {
  if (!entry.run) return [entry.id];
  // A run's ids are consecutive: "turn-12" … "turn-9911".
  const first = /^(.*?)(\d+)$/.exec(entry.id);
  const last = /^(.*?)(\d+)$/.exec(entry.run.lastId);
  if (!first || !last || first[1] !== last[1]) return [entry.id, entry.run.lastId];
  const ids = [];
  for (let n = Number(first[2]); n <= Number(last[2]); n += 1) ids.push(`${first[1]}${n}`);
  return ids;
}

/** A reason's name as the WIT spells it (`over-budget`, `duplicate-of`). */
export function reasonName(reason) {
  if (typeof reason === 'string') return reason;
  return Object.keys(reason)[0].replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);
}

/**
 * The candidates as the snapshot counts them, a run counting each member:
 * taken, not decided (a failed assembly's `assembly-failed`), dropped, and
 * of the dropped how far their tokens were counted (`exact`, `over`:
 * counting stopped, `uncounted`) with the tokens counted, in all and by
 * reason (`partly` when some were counted only in part).
 */
export function counts(snapshot) {
  const c = {
    candidates: 0, taken: 0, undecided: 0, dropped: 0, exact: 0, over: 0, uncounted: 0, droppedTokens: 0,
    byReason: new Map(),
  };
  for (const e of snapshot.entries) {
    const n = e.run ? e.run.count : 1;
    c.candidates += n;
    if (e.included) {
      c.taken += n;
      continue;
    }
    if (e.reason === 'assembly-failed') {
      c.undecided += n;
      continue;
    }
    c.dropped += n;
    c[e.counted] += n;
    if (e.counted === 'uncounted' || e.tokens === 0) continue;
    c.droppedTokens += e.tokens;
    const why = reasonName(e.reason);
    const was = c.byReason.get(why) ?? { tokens: 0, partly: false };
    c.byReason.set(why, { tokens: was.tokens + e.tokens, partly: was.partly || e.counted === 'over' });
  }
  return c;
}

/**
 * Each scored entry's rank in its section (1 = first), by index into the
 * snapshot's entries: host candidates stand in the order the fill met
 * them, which is their rank order (score, highest first, ties by id).
 */
export function ranks(snapshot) {
  const next = new Map();
  const out = new Map();
  snapshot.entries.forEach((e, i) => {
    if (e.score === null || e.score === undefined) return;
    const r = (next.get(e.section) ?? 0) + 1;
    next.set(e.section, r);
    out.set(i, r);
  });
  return out;
}

/**
 * The fewest significant digits (at least 2) that show every pair of
 * entries of a section at different ranks with different scores as
 * different numbers.
 */
export function scoreDigits(snapshot) {
  const bySection = new Map();
  for (const e of snapshot.entries) {
    if (e.score === null || e.score === undefined) continue;
    bySection.set(e.section, [...(bySection.get(e.section) ?? []), e.score]);
  }
  for (let digits = 2; digits < 17; digits += 1) {
    const clash = [...bySection.values()].some((scores) => {
      const shown = new Map();
      return scores.some((s) => {
        const text = s.toPrecision(digits);
        if (shown.has(text) && shown.get(text) !== s) return true;
        shown.set(text, s);
        return false;
      });
    });
    if (!clash) return digits;
  }
  return 17;
}

/**
 * The ids that stand for more than one candidate: id → the calls that
 * answered them, one per candidate, in the snapshot's order.
 */
export function repeatedIds(snapshot) {
  const calls = new Map();
  for (const e of snapshot.entries) {
    for (const id of memberIds(e)) calls.set(id, [...(calls.get(id) ?? []), CALL_OF[e.origin] ?? e.origin]);
  }
  return new Map([...calls].filter(([, c]) => c.length > 1));
}

const ORDINAL = ['first', 'second', 'third', 'fourth', 'fifth'];
const TIMES = ['', 'once', 'twice', 'three times', 'four times', 'five times'];

/** How a repeated id was answered, said for its `k`-th candidate. */
export function sayRepeated(id, calls, k) {
  const byCall = new Map();
  for (const c of calls) byCall.set(c, (byCall.get(c) ?? 0) + 1);
  const who = [...byCall].map(([c, n]) => `${c} ${TIMES[n] ?? `${n} times`}`).join(' and ');
  const nth = ORDINAL[k] ?? `${k + 1}th`;
  return `The id ${id} was answered ${calls.length} times: by ${who}. This row is the ${nth} of them in the table, from ${calls[k]}.`;
}

/**
 * Why the fill passed over entry `i` (dropped over budget) while a
 * lower-ranked candidate of its section was taken, or null when none was.
 */
export function passedOver(snapshot, i, rankOf) {
  const e = snapshot.entries[i];
  const why = e.reason?.overBudget;
  if (!why || !rankOf.has(i)) return null;
  const rank = rankOf.get(i);
  const taken = snapshot.entries
    .map((o, j) => ({ o, j }))
    .filter(({ o, j }) => o.section === e.section && o.included && (rankOf.get(j) ?? 0) > rank);
  if (taken.length === 0) return null;
  const named = taken.slice(0, 3).map(({ o, j }) => `${o.id} (#${rankOf.get(j)}, ${o.tokens} tokens)`).join(', ');
  const more = taken.length > 3 ? ` and ${taken.length - 3} more` : '';
  const share = snapshot.plan.shares.find((s) => s.section === e.section)?.share ?? 0;
  const shareTokens = Math.floor(share * snapshot.tokenBudget);
  const room = share === 0
    ? `${e.section} has no share of its own, so it fills only from what the other sections leave`
    : why.needed > shareTokens
      ? `this one needed more than ${e.section}'s whole share (${share} × ${snapshot.tokenBudget} = ${shareTokens} tokens)`
      : `${e.section}'s share is ${share} × ${snapshot.tokenBudget} = ${shareTokens} tokens`;
  return `Passed over in rank order: lower-ranked ${named}${more} fit where this did not; ${room}.`;
}

/**
 * Which of `pack.messages` carries each pack entry (0-based), as the
 * messages form sends them, in the pack's layout: each kept conversation
 * turn a message of its own role; the other entries joined into
 * messages, a new one beginning the pack, after a turn, where L0 gives
 * way to the other context, or where L0 follows context sent as the
 * user's (the stable prefix first; laid out cache-first, the context
 * after the conversation, before its newest user turn).
 */
export function messageOf(pack) {
  const isTurn = (e) => e.section === 'conversation-state';
  let index = -1;
  let before;
  let role;
  return pack.entries.map((e) => {
    const l0 = e.layer === 'l0';
    if (isTurn(e)) {
      index += 1;
      before = 'turn';
      return { index, what: 'a conversation turn' };
    }
    // L0 after context of the user's (untrusted origin) is a system
    // message of its own: the entries carry the role they are sent in.
    const lateL0 = before === 'context' && l0 && role !== e.role;
    if (before === undefined || before === 'turn' || (before === 'l0' && !l0) || lateL0) index += 1;
    before = l0 ? 'l0' : 'context';
    role = e.role;
    return { index, what: index === 0 && l0 ? 'the stable prefix' : 'the context' };
  });
}

/** How many tokens an entry has, as far as they were counted. */
export function sayTokens(counted, tokens) {
  if (counted === 'uncounted') return 'not counted';
  if (counted === 'over') return `more than ${tokens} tokens (counting stopped)`;
  return `${tokens} ${tokens === 1 ? 'token' : 'tokens'}`;
}

/**
 * Why an entry was taken or dropped, in a sentence with what its reason
 * carries in place (`explain` gives the WIT's words for the others).
 */
export function sayReason(snapshot, e, explain) {
  // A reason without a value is a kebab-case string, one with a value an
  // object under its camelCase name.
  const [name, v] = typeof e.reason === 'string'
    ? [e.reason.replace(/-([a-z])/g, (_, c) => c.toUpperCase()), undefined]
    : Object.entries(e.reason)[0];
  const taken = (id) => snapshot.entries.some((o) => o.id === id && o.included);
  switch (name) {
    case 'keepLast':
      return `Dropped: older than the last ${v} turns the request keeps (its keep-last).`;
    case 'overBudget': {
      const atLeast = e.counted === 'exact' ? '' : 'at least ';
      const newer = e.section === 'conversation-state'
        ? ', with the turns kept or dropped with it (a tool call and its results) and any newer turn left out'
        : e.section === 'stage-summaries' ? ', with any newer summary left out' : '';
      const shared = snapshot.plan.shares.some((s) => s.section === e.section);
      const noShare = e.origin !== 'request' && !shared
        ? ` ${e.section} has no share in the plan: it fills only from what the other sections leave.` : '';
      return `Dropped: it needed ${atLeast}${v.needed} tokens (its own, the entry overhead and the join${newer}), and ${v.remaining} remained.${noShare}`;
    }
    case 'toolPair':
      return `Dropped together with the tool-call turn it belongs to (${v}).`;
    case 'duplicateOf':
      // The same id as a candidate before it is a duplicate whatever its text.
      if (v === e.id) {
        const own = snapshot.entries.some((o) => o.origin === 'request' && memberIds(o).includes(v));
        return own
          ? `Dropped: the request's own ${v} has this id, and an id is considered once.`
          : `Dropped: a candidate before it, by rank, has the same id, ${v}; an id is considered once.`;
      }
      return `Dropped: a copy of ${v}${taken(v) ? ', which was taken' : ''}.`;
    case 'policyDenied':
      return `Dropped: the policy denied it: “${v}”.`;
    case 'summarized':
      return `Dropped as itself: its text went into the summary ${v}.`;
    case 'stepCut':
      return `Dropped with older ones so that the first kept turn or stage summary moves in steps of ${v} (the plan's cut step).`;
    case 'beyondLimit':
      return `Dropped: the source was asked for ${v} and answered more; by the source's own order this one came after the first ${v}.`;
    case 'assemblyFailed':
      return 'Not decided: the assembly failed first (the snapshot\'s failure, above, says why).';
    default:
      return explain(e.reason).replace(/`/g, '');
  }
}

/**
 * What happened to a taken entry's text: summarised or cut by its
 * section's compression, the summary itself, redacted by the policy.
 */
export function sayAltered(snapshot, e) {
  const out = [];
  if (e.origin === 'summary') out.push('a summary');
  else if (e.compressed) {
    const how = snapshot.compressions.find((c) => c.section === e.section)?.outcome;
    out.push(how && 'cut' in how ? 'cut to fit' : 'summarised');
  }
  if (e.redacted) out.push('redacted');
  return out.length ? ` (${out.join(', ')})` : '';
}
