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
use aho_corasick::{AhoCorasick, MatchKind};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};
use unicode_normalization::UnicodeNormalization;

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

/// Longest word (in characters) the fuzzy index considers; longer query
/// words are compared exactly only, which keeps the cost per word bounded.
const FUZZY_MAX_WORD: usize = 32;
/// Shortest keyword (in characters) that matches fuzzily.
const FUZZY_MIN_WORD: usize = 6;

fn deletions(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    (0..chars.len())
        .map(|i| chars[..i].iter().chain(&chars[i + 1..]).collect())
        .collect()
}

/// Whether `a` and `b` are at most one edit apart (insertion, deletion,
/// substitution or transposition of adjacent characters).
fn one_edit_apart(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    match long.len() - short.len() {
        0 => {
            let diffs: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
            match diffs.as_slice() {
                [] | [_] => true,
                [i, j] => *j == i + 1 && a[*i] == b[*j] && a[*j] == b[*i],
                _ => false,
            }
        }
        1 => {
            let i = (0..short.len())
                .find(|&i| short[i] != long[i])
                .unwrap_or(short.len());
            short[i..] == long[i + 1..]
        }
        _ => false,
    }
}

impl Router {
    /// Parses and compiles a config text.
    pub fn from_text(text: &str, format: ConfigFormat) -> Result<Self, Error> {
        let config: RouterConfig = match format {
            ConfigFormat::Json => {
                let de = &mut serde_json::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    Error::invalid(format!("config.{}", e.path()), e.into_inner().to_string())
                })?
            }
            ConfigFormat::Yaml => {
                let de = serde_yaml_ng::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    Error::invalid(format!("config.{}", e.path()), e.into_inner().to_string())
                })?
            }
        };
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

/// What every route's rules and the cues compile into, as it is built: the
/// words for one automaton, the regular expressions for one set, the fuzzy
/// keywords' index.
#[derive(Default)]
struct Matchers {
    /// Each word pattern, spaced so it matches whole words only.
    patterns: Vec<String>,
    word_targets: Vec<(Target, String)>,
    regex_sources: Vec<String>,
    regex_each: Vec<Regex>,
    regex_targets: Vec<(usize, usize)>,
    fuzzy: HashMap<String, Vec<(usize, usize, String)>>,
}

impl Matchers {
    /// Rule `k` of route `r`: its matchers, and its label for the
    /// decision's breakdown. `field` names a field of the rule.
    fn rule(
        &mut self,
        r: usize,
        k: usize,
        rule: &RuleConfig,
        field: impl Fn(&str) -> String,
    ) -> Result<String, Error> {
        check_unit(field(".weight"), rule.weight, true)?;
        let target = Target::Rule { route: r, rule: k };
        match (&rule.keywords, &rule.phrase, &rule.regex) {
            (Some(words), None, None) => {
                if words.is_empty() {
                    return Err(Error::invalid(field(".keywords"), "must not be empty"));
                }
                for (i, w) in words.iter().enumerate() {
                    let n = normalize(w);
                    if n.is_empty() {
                        return Err(Error::invalid(
                            field(&format!(".keywords[{i}]")),
                            "has no letters or digits",
                        ));
                    }
                    if rule.fuzzy {
                        self.fuzzy_keyword(r, k, &n);
                    }
                    self.word(target, n);
                }
                Ok(format!("keywords: {}", words.join(", ")))
            }
            (None, Some(phrase), None) => {
                let n = normalize(phrase);
                if n.is_empty() {
                    return Err(Error::invalid(field(".phrase"), "has no letters or digits"));
                }
                self.word(target, n);
                Ok(format!("phrase: {phrase}"))
            }
            (None, None, Some(re)) => {
                // Compiled alone too: the error names this rule, and the
                // matched text is reported from it.
                let one = RegexBuilder::new(re)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| Error::invalid(field(".regex"), e.to_string()))?;
                self.regex_each.push(one);
                self.regex_sources.push(re.clone());
                self.regex_targets.push((r, k));
                Ok(format!("regex: {re}"))
            }
            _ => Err(Error::invalid(
                field(""),
                "give exactly one of keywords, phrase, regex",
            )),
        }
    }

    /// A normalised word or phrase for the automaton.
    fn word(&mut self, target: Target, normalized: String) {
        self.patterns.push(format!(" {normalized} "));
        self.word_targets.push((target, normalized));
    }

    /// A fuzzy keyword, indexed by itself and its single-deletion variants
    /// when it is one word of a length that matches fuzzily.
    fn fuzzy_keyword(&mut self, r: usize, k: usize, normalized: &str) {
        if normalized.contains(' ') {
            return;
        }
        let len = normalized.chars().count();
        if (FUZZY_MIN_WORD..=FUZZY_MAX_WORD).contains(&len) {
            for v in std::iter::once(normalized.to_owned()).chain(deletions(normalized)) {
                self.fuzzy
                    .entry(v)
                    .or_default()
                    .push((r, k, normalized.to_owned()));
            }
        }
    }

    /// The reference cues (the defaults when the config leaves them out),
    /// added to the automaton.
    fn cues(&mut self, configured: Option<&[String]>) -> Result<Vec<String>, Error> {
        let cues: Vec<String> = match configured {
            Some(cues) => cues.to_vec(),
            None => crate::defaults::REFERENCE_CUES
                .iter()
                .map(|c| (*c).to_owned())
                .collect(),
        };
        for (i, cue) in cues.iter().enumerate() {
            let n = normalize(cue);
            if n.is_empty() {
                return Err(Error::invalid(
                    format!("config.reference-cues[{i}]"),
                    "has no letters or digits",
                ));
            }
            self.word(Target::Cue(i), n);
        }
        Ok(cues)
    }

    /// The automaton over every word pattern and the set of every regular
    /// expression, each only if there is something to match.
    fn automata(&self) -> Result<(Option<AhoCorasick>, Option<RegexSet>), Error> {
        let words = if self.patterns.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&self.patterns)
                    .map_err(|e| Error::invalid("config.routes", e.to_string()))?,
            )
        };
        let regexes = if self.regex_sources.is_empty() {
            None
        } else {
            Some(
                RegexSetBuilder::new(&self.regex_sources)
                    .case_insensitive(true)
                    .build()
                    .map_err(|e| Error::invalid("config.routes", e.to_string()))?,
            )
        };
        Ok((words, regexes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r#"
threshold: 0.5
routes:
  - name: weather
    skill: weather-skill
    rules:
      - keywords: [weather, forecast, temperature]
        weight: 0.6
        fuzzy: true
      - phrase: will it rain
        weight: 0.8
      - regex: '\b(rain|snow|sunny)\b'
        weight: 0.3
    entities:
      - '\bin (?P<city>[\p{L}][\p{L} ]*?)(?:\s+(?:today|tomorrow)|[?.!]|$)'
  - name: email
    skill: email-skill
    threshold: 0.7
    rules:
      - keywords: [email, mail, inbox]
        weight: 0.7
"#;

    fn router() -> Router {
        Router::from_text(YAML, ConfigFormat::Yaml).unwrap()
    }

    #[test]
    fn normalisation_folds_case_width_and_punctuation() {
        assert_eq!(normalize("  Hello,   WORLD!! "), "hello world");
        assert_eq!(normalize("ＷＥＡＴＨＥＲ"), "weather");
        assert_eq!(normalize("Straße ÉTÉ"), "straße été");
        assert_eq!(normalize("what's up?"), "what s up");
        assert_eq!(normalize("東京の天気"), "東京の天気");
    }

    #[test]
    fn confident_route_with_entities_and_rule_breakdown() {
        let d = router().route("Will it RAIN in Porto tomorrow?");
        assert_eq!(d.route.as_deref(), Some("weather"));
        assert_eq!(d.skill.as_deref(), Some("weather-skill"));
        // phrase 0.8 and regex 0.3: 1 - 0.2 * 0.7
        assert!((d.confidence - 0.86).abs() < 1e-9, "{}", d.confidence);
        assert!(!d.low_confidence && d.goes_to_skill());
        assert_eq!(
            d.matched_entities,
            vec![Entity {
                name: "city".into(),
                value: "Porto".into()
            }]
        );
        let rules = &d.scores[0].rules;
        assert_eq!(rules[0].matched, None);
        assert_eq!(rules[1].matched.as_deref(), Some("will it rain"));
        assert_eq!(rules[2].matched.as_deref(), Some("RAIN"));
    }

    #[test]
    fn keywords_match_whole_words_only() {
        let d = router().route("the weatherman emailed me");
        assert_eq!(d.route, None);
        assert!(d.low_confidence);
        assert_eq!(d.confidence, 0.0);
        assert!(d.scores.is_empty());
    }

    #[test]
    fn competing_routes_lower_the_confidence() {
        let d = router().route("email me the weather forecast");
        assert_eq!(d.route.as_deref(), Some("email"));
        // 0.7 × (1 − 0.6)
        assert!((d.confidence - 0.28).abs() < 1e-9);
        assert!(d.low_confidence);
        assert_eq!(d.threshold, 0.7, "the route's own threshold applies");
        assert_eq!(d.scores.len(), 2);
    }

    #[test]
    fn fuzzy_keywords_catch_one_edit() {
        for q in [
            "wheather today",
            "weathr today",
            "waether today",
            "weatherr today",
        ] {
            let d = router().route(q);
            assert_eq!(d.route.as_deref(), Some("weather"), "{q}");
            assert!(
                d.scores[0].rules[0]
                    .matched
                    .as_deref()
                    .unwrap()
                    .contains("~ weather")
            );
        }
        // Two edits away, or a short word: no match.
        assert_eq!(router().route("wheatherr").route, None);
        assert_eq!(router().route("mial").route, None, "email is not fuzzy");
    }

    #[test]
    fn one_edit_apart_is_exact() {
        assert!(one_edit_apart("weather", "weather"));
        assert!(one_edit_apart("weather", "weathr"));
        assert!(one_edit_apart("weather", "wether"));
        assert!(one_edit_apart("weather", "waether"));
        assert!(one_edit_apart("weather", "weathers"));
        assert!(one_edit_apart("weather", "weatker"));
        assert!(!one_edit_apart("weather", "waethre"));
        assert!(!one_edit_apart("weather", "wheatherr"));
        assert!(!one_edit_apart("abc", "cba"));
    }

    #[test]
    fn reference_cues_fire_even_on_a_confident_route() {
        let d = router().route("Will it rain like last time?");
        assert_eq!(d.route.as_deref(), Some("weather"));
        assert!(!d.low_confidence);
        assert_eq!(d.reference_cue.as_deref(), Some("like last time"));
        assert!(!d.goes_to_skill());
        let none = Router::from_text(
            &YAML.replace("threshold: 0.5\n", "threshold: 0.5\nreference-cues: []\n"),
            ConfigFormat::Yaml,
        )
        .unwrap();
        assert!(none.route("Will it rain like last time?").goes_to_skill());
    }

    #[test]
    fn json_and_yaml_configs_are_equivalent() {
        let config = RouterConfig {
            threshold: 0.4,
            reference_cues: None,
            routes: vec![RouteConfig {
                name: "a".into(),
                skill: "s".into(),
                threshold: None,
                rules: vec![RuleConfig {
                    keywords: Some(vec!["alpha".into()]),
                    phrase: None,
                    regex: None,
                    weight: 1.0,
                    fuzzy: false,
                }],
                entities: vec![],
            }],
        };
        let json = serde_json::to_string(&config).unwrap();
        let yaml = serde_yaml_ng::to_string(&config).unwrap();
        let a = Router::from_text(&json, ConfigFormat::Json).unwrap();
        let b = Router::from_text(&yaml, ConfigFormat::Yaml).unwrap();
        assert_eq!(a.route("alpha beta"), b.route("alpha beta"));
    }

    fn config_error(text: &str) -> String {
        match Router::from_text(text, ConfigFormat::Yaml) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {text}"),
        }
    }

    #[test]
    fn bad_configs_name_the_route_and_field() {
        let e = config_error(&YAML.replace("weight: 0.3", "weight: 1.5"));
        assert!(
            e.contains("config.routes[0] (weather).rules[2].weight"),
            "{e}"
        );
        let e = config_error(&YAML.replace(r"'\b(rain|snow|sunny)\b'", "'(unclosed'"));
        assert!(
            e.contains("config.routes[0] (weather).rules[2].regex"),
            "{e}"
        );
        let e = config_error(&YAML.replace("name: email", "name: weather"));
        assert!(e.contains("config.routes[1] (weather).name"), "{e}");
        assert!(e.contains("duplicate"), "{e}");
        let e = config_error(&YAML.replace("threshold: 0.7", "threshold: 7"));
        assert!(e.contains("config.routes[1] (email).threshold"), "{e}");
        let e = config_error(&YAML.replace("threshold: 0.5", "threshold: -0.1"));
        assert!(e.contains("config.threshold"), "{e}");
        let e = config_error(
            &YAML.replace("skill: email-skill", "skill: email-skill\n    colour: blue"),
        );
        assert!(
            e.contains("config.routes[1]") && e.contains("colour"),
            "{e}"
        );
        let e = config_error(&YAML.replace(
            "      - phrase: will it rain",
            "      - phrase: will it rain\n        keywords: [x]",
        ));
        assert!(e.contains("rules[1]") && e.contains("exactly one"), "{e}");
        let e = config_error(&YAML.replace("(?P<city>", "("));
        assert!(
            e.contains("entities[0]") && e.contains("named capture"),
            "{e}"
        );
    }

    #[test]
    fn routing_is_deterministic_under_ties() {
        let yaml = r#"
threshold: 0.1
routes:
  - { name: b, skill: sb, rules: [{ keywords: [shared], weight: 0.5 }] }
  - { name: a, skill: sa, rules: [{ keywords: [shared], weight: 0.5 }] }
"#;
        let r = Router::from_text(yaml, ConfigFormat::Yaml).unwrap();
        let d = r.route("shared");
        assert_eq!(d.route.as_deref(), Some("a"), "ties break by name");
        assert_eq!(d.confidence, 0.25);
    }
}
