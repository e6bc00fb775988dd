//! Scenarios whose numbers sit where a JSON number may not mean the same
//! on every host: signed zeros, subnormals, the largest finite, integers
//! past 2^53.

use super::*;

/// Numbers at the edges of what a JSON number means the same on every
/// host: signed zeros, the smallest subnormal, the largest finite, values
/// whose shortest spelling takes an exponent, sums that do not round
/// evenly, integers past 2^53.
const EDGES: &[f64] = &[
    -0.0,
    0.0,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1e-300,
    1e-7,
    0.1 + 0.2,
    1.0 / 3.0,
    1.0,
    -1.0,
    123_456_789.123_456_79,
    9_007_199_254_740_993.0,
    1e21,
    1e300,
    1.797_693_134_862_315_7e308,
];

/// A generated scenario (see [`scenario`]) whose numbers sit at the edges
/// (`EDGES`): the hosts' scores, the ranking's weights, the plan's shares
/// and safety margin, the near-duplicate threshold — signed zeros above
/// all, which a JavaScript host's JSON writes as `0`. Every host must give
/// the native outcome byte for byte, its snapshot id included.
pub fn edge_scenario(src: &mut Source) -> Scenario {
    let mut s = scenario(src);
    for answer in [
        &mut s.host.retrieve,
        &mut s.host.expand_graph,
        &mut s.host.recall_memory,
        &mut s.host.repository_state,
    ] {
        if let Some(Answer::Items(items) | Answer::AllItems(items)) = answer {
            for c in items.iter_mut() {
                c.score = (!src.one_in(6)).then(|| src.pick(EDGES));
            }
        }
    }
    let unit: Vec<f64> = EDGES
        .iter()
        .copied()
        .filter(|x| (0.0..=1.0).contains(x))
        .collect();
    for (_, w) in s.config.ranking.weights_mut() {
        if src.one_in(2) {
            *w = src.pick(EDGES);
        }
    }
    if src.one_in(2) {
        s.config.near_duplicate_threshold = src.pick(&unit);
    }
    if src.one_in(3) {
        s.config.plan.safety_margin = src.pick(&[-0.0, 0.0, 5e-324, 1e-7, 0.1 + 0.2]);
    }
    for share in &mut s.config.plan.shares {
        if src.one_in(2) {
            share.share = src.pick(&[-0.0, 0.0, 5e-324, 1e-7, 1e-300]);
        }
    }
    s.description = "generated, numbers at the edges".to_owned();
    s
}
