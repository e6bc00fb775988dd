//! What a router's rules compile into: the words for one Aho-Corasick
//! automaton, the regular expressions for one `RegexSet`, and the index of
//! single-deletion variants through which `fuzzy` keywords match a word one
//! edit away.

use super::{RuleConfig, Target, check_unit, normalize};
use crate::error::Error;
use aho_corasick::{AhoCorasick, MatchKind};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use std::collections::HashMap;

/// Longest word (in characters) the fuzzy index considers; longer query
/// words are compared exactly only, which keeps the cost per word bounded.
pub(super) const FUZZY_MAX_WORD: usize = 32;
/// Shortest keyword (in characters) that matches fuzzily.
pub(super) const FUZZY_MIN_WORD: usize = 6;

pub(super) fn deletions(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    (0..chars.len())
        .map(|i| chars[..i].iter().chain(&chars[i + 1..]).collect())
        .collect()
}

/// Whether `a` and `b` are at most one edit apart (insertion, deletion,
/// substitution or transposition of adjacent characters).
pub(super) fn one_edit_apart(a: &str, b: &str) -> bool {
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

/// What every route's rules and the cues compile into, as it is built: the
/// words for one automaton, the regular expressions for one set, the fuzzy
/// keywords' index.
#[derive(Default)]
pub(super) struct Matchers {
    /// Each word pattern, spaced so it matches whole words only.
    pub(super) patterns: Vec<String>,
    pub(super) word_targets: Vec<(Target, String)>,
    pub(super) regex_sources: Vec<String>,
    pub(super) regex_each: Vec<Regex>,
    pub(super) regex_targets: Vec<(usize, usize)>,
    pub(super) fuzzy: HashMap<String, Vec<(usize, usize, String)>>,
}

impl Matchers {
    /// Rule `k` of route `r`: its matchers, and its label for the
    /// decision's breakdown. `field` names a field of the rule.
    pub(super) fn rule(
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
    pub(super) fn word(&mut self, target: Target, normalized: String) {
        self.patterns.push(format!(" {normalized} "));
        self.word_targets.push((target, normalized));
    }

    /// A fuzzy keyword, indexed by itself and its single-deletion variants
    /// when it is one word of a length that matches fuzzily.
    pub(super) fn fuzzy_keyword(&mut self, r: usize, k: usize, normalized: &str) {
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
    pub(super) fn cues(&mut self, configured: Option<&[String]>) -> Result<Vec<String>, Error> {
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
    pub(super) fn automata(&self) -> Result<(Option<AhoCorasick>, Option<RegexSet>), Error> {
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
