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
    let e =
        config_error(&YAML.replace("skill: email-skill", "skill: email-skill\n    colour: blue"));
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
