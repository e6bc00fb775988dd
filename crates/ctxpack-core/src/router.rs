//! The router: a pure function of the raw query.
//!
//! Routes come from a config users write in YAML or JSON. Each route has
//! weighted rules (keywords, phrases, regular expressions), entity patterns
//! whose named captures become `matched_entities`, and a confidence threshold
//! (global, overridable per route). The router never sees a request context.
//!
//! **Text handling.** Keywords, phrases and reference cues are compared on
//! normalised text: Unicode NFKC, then full Unicode lowercasing, then every
//! run of characters that are not letters or digits becomes one space. A
//! keyword or phrase matches whole words only. Regular expressions and entity
//! patterns run on the raw query, case-insensitively and Unicode-aware, so
//! captured entities keep their original spelling.
//!
//! **Scoring.** A rule of weight `w` (0 < w ≤ 1) is independent evidence for
//! its route; a route's score is `1 − Π(1 − w)` over its matched rules. The
//! confidence is `best × (1 − second best)`: high when one route clearly
//! wins, low when nothing matched strongly or two routes compete.
//!
//! **Cost.** Rules are compiled once: all keywords, phrases and cues of every
//! route into one Aho-Corasick automaton, all regular expressions into one
//! `RegexSet`. Routing is one pass of each over the query, whatever the
//! number of rules; entity patterns run for the winning route only.
//! Keywords of six or more characters marked `fuzzy` also match a word one edit away (a letter added,
//! dropped, changed or two adjacent letters swapped) through an index of
//! single-deletion variants, so this too costs a bounded amount per query
//! word.

use crate::error::Error;
use aho_corasick::AhoCorasick;
use regex::{Regex, RegexBuilder, RegexSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use unicode_normalization::UnicodeNormalization;

mod matchers;
use matchers::{FUZZY_MAX_WORD, FUZZY_MIN_WORD, Matchers, deletions, one_edit_apart};

/// The format of a router config text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigFormat {
    /// YAML.
    Yaml,
    /// JSON.
    Json,
}

/// A router config as users write it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RouterConfig {
    /// Confidence below which a decision is low-confidence, in [0, 1].
    pub threshold: f64,
    /// Phrases that send a query to the builder even on a confident route;
    /// [`crate::defaults::REFERENCE_CUES`] when left out, none when empty.
    #[serde(default)]
    pub reference_cues: Option<Vec<String>>,
    /// The routes.
    pub routes: Vec<RouteConfig>,
}

/// One route.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RouteConfig {
    /// Unique name.
    pub name: String,
    /// The skill a confident match dispatches to.
    pub skill: String,
    /// This route's own threshold, in [0, 1].
    #[serde(default)]
    pub threshold: Option<f64>,
    /// Weighted rules; at least one.
    pub rules: Vec<RuleConfig>,
    /// Regular expressions whose named captures become matched entities.
    #[serde(default)]
    pub entities: Vec<String>,
}

/// One weighted rule: exactly one of `keywords`, `phrase`, `regex`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RuleConfig {
    /// Matches when any of these words appears.
    #[serde(default)]
    pub keywords: Option<Vec<String>>,
    /// Matches when this sequence of words appears.
    #[serde(default)]
    pub phrase: Option<String>,
    /// Matches when this regular expression matches the raw query.
    #[serde(default)]
    pub regex: Option<String>,
    /// Strength of the evidence, in (0, 1].
    pub weight: f64,
    /// Keywords of six or more characters also match one edit away.
    #[serde(default)]
    pub fuzzy: bool,
}

/// How one rule fared on a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RuleScore {
    /// The rule, e.g. `keywords[0]: weather, forecast`.
    pub rule: String,
    /// Its weight.
    pub weight: f64,
    /// What matched (normalised for keywords and phrases), if it matched.
    pub matched: Option<String>,
}

/// How one route fared on a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RouteScore {
    /// Route name.
    pub route: String,
    /// Its score, `1 − Π(1 − w)` over matched rules.
    pub score: f64,
    /// Every rule, in config order.
    pub rules: Vec<RuleScore>,
}

/// A named capture of an entity pattern.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Entity {
    /// The capture group's name.
    pub name: String,
    /// The captured text, as written in the query.
    pub value: String,
}

/// What the router decided, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RoutingDecision {
    /// The best route, if any rule of any route matched.
    pub route: Option<String>,
    /// Its skill.
    pub skill: Option<String>,
    /// `best × (1 − second best)`, in [0, 1].
    pub confidence: f64,
    /// The threshold that applied (the route's own, or the global one).
    pub threshold: f64,
    /// No route, or confidence below the threshold.
    pub low_confidence: bool,
    /// The reference/comparison cue found in the query, if any: such a
    /// query goes to the builder even on a confident route.
    pub reference_cue: Option<String>,
    /// Named captures of the best route's entity patterns.
    pub matched_entities: Vec<Entity>,
    /// Every route with a score above zero, best first (ties by name).
    pub scores: Vec<RouteScore>,
}

impl RoutingDecision {
    /// Whether the query goes to the skill directly (confident route, no
    /// reference cue) rather than through the context builder.
    pub fn goes_to_skill(&self) -> bool {
        self.route.is_some() && !self.low_confidence && self.reference_cue.is_none()
    }
}

/// Which rule a pattern of the automaton stands for.
#[derive(Clone, Copy, Debug)]
enum Target {
    Rule { route: usize, rule: usize },
    Cue(usize),
}

struct CompiledRoute {
    name: String,
    skill: String,
    threshold: f64,
    rules: Vec<(String, f64)>,
    entities: Vec<Regex>,
}

/// A compiled router. Build it once from its config; routing is then a
/// pure function of the query.
pub struct Router {
    threshold: f64,
    routes: Vec<CompiledRoute>,
    cues: Vec<String>,
    words: Option<AhoCorasick>,
    regexes: Option<RegexSet>,
    /// What each word pattern and regex stands for, and the fuzzy index.
    matchers: Matchers,
}

/// Normalises text for keyword, phrase and cue matching: NFKC, lowercase,
/// anything but letters and digits folded to single spaces, trimmed.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut gap = false;
    if text.is_ascii() {
        // NFKC leaves ASCII as it is: only case and punctuation to fold.
        let mut bytes = Vec::with_capacity(text.len());
        for b in text.bytes() {
            if b.is_ascii_alphanumeric() {
                if gap && !bytes.is_empty() {
                    bytes.push(b' ');
                }
                gap = false;
                bytes.push(b.to_ascii_lowercase());
            } else {
                gap = true;
            }
        }
        // ASCII in, ASCII out: always valid.
        return String::from_utf8(bytes).unwrap_or_default();
    }
    for c in text.nfkc().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    out
}

fn check_unit(field: String, value: f64, open_at_zero: bool) -> Result<(), Error> {
    let ok = if open_at_zero {
        value > 0.0 && value <= 1.0
    } else {
        (0.0..=1.0).contains(&value)
    };
    if ok {
        Ok(())
    } else {
        let range = if open_at_zero { "(0, 1]" } else { "[0, 1]" };
        Err(Error::invalid(field, format!("{value} is outside {range}")))
    }
}

impl Router {
    /// Parses and compiles a config text.
    pub fn from_text(text: &str, format: ConfigFormat) -> Result<Self, Error> {
        // YAML is read as a JSON value, then as JSON: the config's types
        // are read through one deserializer, not two (each is code the
        // component carries: 7 kB gzipped for YAML's).
        let yaml;
        let json = match format {
            ConfigFormat::Json => text,
            ConfigFormat::Yaml => {
                let value: serde_json::Value = serde_yaml_ng::from_str(text)
                    .map_err(|e| Error::invalid("config", e.to_string()))?;
                yaml = value.to_string();
                &yaml
            }
        };
        let de = &mut serde_json::Deserializer::from_str(json);
        let config: RouterConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            Error::invalid(format!("config.{}", e.path()), e.into_inner().to_string())
        })?;
        Self::new(&config)
    }

    /// Compiles a config; an error names the route and the field.
    pub fn new(config: &RouterConfig) -> Result<Self, Error> {
        let config = &canonical(config);
        check_unit("config.threshold".into(), config.threshold, false)?;
        let mut names = HashSet::new();
        let mut matchers = Matchers::default();
        let mut routes = Vec::with_capacity(config.routes.len());
        for (r, route) in config.routes.iter().enumerate() {
            let at = |field: &str| format!("config.routes[{r}] ({}).{field}", route.name);
            check_route(r, route, &mut names, &at)?;
            let rules = route
                .rules
                .iter()
                .enumerate()
                .map(|(k, rule)| {
                    let label = matchers.rule(r, k, rule, |f| at(&format!("rules[{k}]{f}")))?;
                    Ok((label, rule.weight))
                })
                .collect::<Result<_, Error>>()?;
            routes.push(CompiledRoute {
                name: route.name.clone(),
                skill: route.skill.clone(),
                threshold: route.threshold.unwrap_or(config.threshold),
                rules,
                entities: entities(route, &at)?,
            });
        }
        let cues = matchers.cues(config.reference_cues.as_deref())?;
        let (words, regexes) = matchers.automata()?;
        Ok(Router {
            threshold: config.threshold,
            routes,
            cues,
            words,
            regexes,
            matchers,
        })
    }

    /// Routes a raw query.
    pub fn route(&self, query: &str) -> RoutingDecision {
        let normalized = format!(" {} ", normalize(query));
        let mut hits: Hits = self
            .routes
            .iter()
            .map(|r| vec![None; r.rules.len()])
            .collect();
        let cue = self.match_words(&normalized, &mut hits);
        self.match_fuzzy(&normalized, &mut hits);
        self.match_regexes(query, &mut hits);
        let scores = self.scores(hits);
        let best = scores
            .first()
            .and_then(|s| self.routes.iter().find(|r| r.name == s.route));
        let confidence = match scores.as_slice() {
            [] => 0.0,
            [only] => only.score,
            [first, second, ..] => first.score * (1.0 - second.score),
        };
        let threshold = best.map_or(self.threshold, |r| r.threshold);
        RoutingDecision {
            route: best.map(|r| r.name.clone()),
            skill: best.map(|r| r.skill.clone()),
            confidence,
            threshold,
            low_confidence: best.is_none() || confidence < threshold,
            reference_cue: cue.map(|i| self.cues[i].clone()),
            matched_entities: best.map_or_else(Vec::new, |route| route.entities_in(query)),
            scores,
        }
    }

    /// Keywords, phrases and cues, in one pass of the automaton over the
    /// normalised query: marks the rules that matched, and gives the cue
    /// found (the earliest in the query, then the first in the config).
    fn match_words(&self, normalized: &str, hits: &mut Hits) -> Option<usize> {
        let mut cue: Option<(usize, usize)> = None;
        let Some(ac) = &self.words else {
            return None;
        };
        for m in ac.find_overlapping_iter(normalized) {
            match self.matchers.word_targets[m.pattern().as_usize()] {
                (Target::Rule { route, rule }, ref text) => {
                    hits[route][rule].get_or_insert_with(|| text.clone());
                }
                (Target::Cue(i), _) => {
                    if cue.is_none_or(|(at, j)| (m.start(), i) < (at, j)) {
                        cue = Some((m.start(), i));
                    }
                }
            }
        }
        cue.map(|(_, i)| i)
    }

    /// Fuzzy keywords: each query word of a length that can be one edit
    /// from one, looked up by its single-deletion variants.
    fn match_fuzzy(&self, normalized: &str, hits: &mut Hits) {
        if self.matchers.fuzzy.is_empty() {
            return;
        }
        for word in normalized.split(' ').filter(|w| !w.is_empty()) {
            let len = word.chars().count();
            if !(FUZZY_MIN_WORD - 1..=FUZZY_MAX_WORD).contains(&len) {
                continue;
            }
            let mut seen = BTreeSet::new();
            for v in std::iter::once(word.to_owned()).chain(deletions(word)) {
                for (route, rule, keyword) in self.matchers.fuzzy.get(&v).into_iter().flatten() {
                    if seen.insert((*route, *rule)) && one_edit_apart(word, keyword) {
                        hits[*route][*rule].get_or_insert_with(|| format!("{word} ~ {keyword}"));
                    }
                }
            }
        }
    }

    /// Regular expressions on the raw query: the set says which rules
    /// matched; each such rule's own regex says what text, run only for
    /// those.
    fn match_regexes(&self, query: &str, hits: &mut Hits) {
        let Some(set) = &self.regexes else {
            return;
        };
        for i in set.matches(query).iter() {
            let (route, rule) = self.matchers.regex_targets[i];
            if hits[route][rule].is_none() {
                let text = self.matchers.regex_each[i]
                    .find(query)
                    .map(|m| m.as_str().to_owned());
                hits[route][rule] = Some(text.unwrap_or_default());
            }
        }
    }

    /// Every route with a score above zero, `1 − Π(1 − w)` over its
    /// matched rules, best first (ties by name).
    fn scores(&self, hits: Hits) -> Vec<RouteScore> {
        let mut scores: Vec<RouteScore> = self
            .routes
            .iter()
            .zip(hits)
            .map(|(route, hits)| {
                let miss: f64 = route
                    .rules
                    .iter()
                    .zip(&hits)
                    .filter(|(_, hit)| hit.is_some())
                    .map(|((_, w), _)| 1.0 - w)
                    .product();
                RouteScore {
                    route: route.name.clone(),
                    score: 1.0 - miss,
                    rules: route
                        .rules
                        .iter()
                        .zip(hits)
                        .map(|((label, w), hit)| RuleScore {
                            rule: label.clone(),
                            weight: *w,
                            matched: hit,
                        })
                        .collect(),
                }
            })
            .filter(|s| s.score > 0.0)
            .collect();
        scores.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.route.cmp(&b.route))
        });
        scores
    }
}

/// What matched each rule of each route, by route then rule.
type Hits = Vec<Vec<Option<String>>>;

impl CompiledRoute {
    /// The named captures of this route's entity patterns in `query`.
    fn entities_in(&self, query: &str) -> Vec<Entity> {
        let mut out = Vec::new();
        for re in &self.entities {
            if let Some(caps) = re.captures(query) {
                for name in re.capture_names().flatten() {
                    if let Some(m) = caps.name(name) {
                        out.push(Entity {
                            name: name.to_owned(),
                            value: m.as_str().to_owned(),
                        });
                    }
                }
            }
        }
        out
    }
}

/// `config` with its numbers as every host spells them (−0 is 0).
fn canonical(config: &RouterConfig) -> RouterConfig {
    let mut config = config.clone();
    config.threshold = crate::digest::canonical(config.threshold);
    for route in &mut config.routes {
        route.threshold = route.threshold.map(crate::digest::canonical);
        for rule in &mut route.rules {
            rule.weight = crate::digest::canonical(rule.weight);
        }
    }
    config
}

/// A route's own fields: a unique, non-empty name, a skill, a threshold in
/// range, at least one rule. `at` names a field of the route.
fn check_route<'a>(
    r: usize,
    route: &'a RouteConfig,
    names: &mut HashSet<&'a str>,
    at: &dyn Fn(&str) -> String,
) -> Result<(), Error> {
    if route.name.trim().is_empty() {
        return Err(Error::invalid(
            format!("config.routes[{r}].name"),
            "must not be empty",
        ));
    }
    if !names.insert(route.name.as_str()) {
        return Err(Error::invalid(
            at("name"),
            format!("duplicate route name `{}`", route.name),
        ));
    }
    if route.skill.trim().is_empty() {
        return Err(Error::invalid(at("skill"), "must not be empty"));
    }
    if let Some(t) = route.threshold {
        check_unit(at("threshold"), t, false)?;
    }
    if route.rules.is_empty() {
        return Err(Error::invalid(
            at("rules"),
            "a route needs at least one rule",
        ));
    }
    Ok(())
}

/// A route's entity patterns, compiled; each needs a named capture group.
fn entities(route: &RouteConfig, at: &dyn Fn(&str) -> String) -> Result<Vec<Regex>, Error> {
    let mut entities = Vec::with_capacity(route.entities.len());
    for (e, pattern) in route.entities.iter().enumerate() {
        let re = RegexBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map_err(|err| Error::invalid(at(&format!("entities[{e}]")), err.to_string()))?;
        if re.capture_names().flatten().next().is_none() {
            return Err(Error::invalid(
                at(&format!("entities[{e}]")),
                "has no named capture group, e.g. (?P<city>\\w+)",
            ));
        }
        entities.push(re);
    }
    Ok(entities)
}

#[cfg(test)]
mod tests;
