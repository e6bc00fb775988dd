// The WIT's documentation of each drop or keep reason. Written by
// `cargo run -p ctxpack-codegen` from wit/types.wit: do not edit.
export const REASONS = {
  mandatory: "Included: it belongs to L0, which is never dropped.",
  withinBudget: "Included: it fit the budget.",
  keepLast: "Dropped: older than the last N turns (N given).",
  overBudget: "Dropped: it needed more tokens than remained.",
  evictedOldest: "Dropped: an older stage summary evicted so newer ones fit.",
  toolPair: "Dropped together with the tool-call turn it belongs to (its id given).",
  orphanToolResult: "Dropped: a tool result whose call is not in the conversation.",
  duplicateOf: "Dropped: a copy of the included candidate with this id.",
  policyDenied: "Dropped: the policy denied it, for this reason.",
  outOfScope: "Dropped: outside the attempt's scopes.",
  noProvenance: "Dropped: it carried no provenance.",
  sectionNotAllowed: "Dropped: a host candidate claimed a section hosts may not fill (an L0 section, the conversation or the stage summaries, which are the request's own).",
  summarized: "Dropped as itself: its text went into the summary with this id.",
  stepCut: "Dropped with older ones so the first kept turn or stage summary moves in steps of this many (the plan's cut step).",
  beyondLimit: "Dropped: the source answered more than the limit it was asked for (given), and this one ranked beyond it.",
  assemblyFailed: "Not decided: the assembly failed first (the snapshot's `failure` says why). Only a failed snapshot has it.",
  unreviewed: "Dropped: it would have fit, but the review rounds were spent before the policy saw it (an assembly reviews in at most four rounds; see the `policy` interface).",
  beforeUserTurn: "Dropped: the kept conversation begins with a user turn (the request's `conversation-start`), and this turn, though it fit, came before the first user turn kept.",
};
