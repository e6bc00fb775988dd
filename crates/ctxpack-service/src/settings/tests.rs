//! The settings file read: what it takes, and how each mistake is named.

use super::*;
use crate::upstream::Address;
use std::time::Duration;

fn parse(text: &str) -> Result<Settings, String> {
    Ok(Settings::parse(Path::new("ctxpack.toml"), text)?)
}

#[test]
fn the_fence_key_is_read_from_its_file_and_never_shown() {
    let dir = std::env::temp_dir().join(format!("ctxpack-fence-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ctxpack.toml");
    std::fs::write(dir.join("key"), "a secret of thirty-two bytes ...\n").unwrap();
    std::fs::write(dir.join("short"), "too short\n").unwrap();
    let toml = "[context]\nfence-key-file = \"key\"\n";
    let s = Settings::parse(&file, toml).unwrap();
    assert_eq!(
        s.builder.fence_key.as_deref(),
        Some("a secret of thirty-two bytes ...")
    );
    assert!(!format!("{:?}", s.builder).contains("thirty-two"));
    let e = Settings::parse(&file, "[context]\nfence-key-file = \"short\"\n").unwrap_err();
    // Typed: the key named, the length given, never the secret.
    assert_eq!(e.place, Place::Key("context.fence-key-file".into()));
    assert!(e.message.contains("9 bytes"), "{e}");
    let e = e.to_string();
    assert!(!e.contains("too short"), "{e}");
    let e = Settings::parse(&file, "[context]\nfence-key-file = \"none\"\n").unwrap_err();
    assert!(e.to_string().contains("context.fence-key-file"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_seeds_options_and_an_upstream_are_read() {
    let s = parse(
        r#"
        [context]
        default-budget-tokens = 12000
        compression-profile = "code-fast"
        [context.section-budgets]
        relevant-knowledge = 0.5
        current-task = 0.2
        [builder]
        profile = { full = { retrieve-limit = 4, graph-depth = 1, memory-limit = 2, repository-state = true } }
        [upstreams.retrieve]
        grpc = "http://127.0.0.1:7001"
        timeout-ms = 250
        [upstreams.review]
        http = "http://127.0.0.1:7002/policy"
        retries = 0
        "#,
    )
    .unwrap();
    assert_eq!(s.builder.plan.default_budget, 12000);
    assert_eq!(s.builder.plan.shares.len(), 2);
    assert_eq!(s.compression_profile.as_deref(), Some("code-fast"));
    let r = &s.upstreams["sources.retrieve"];
    assert_eq!(r.address, Address::Grpc("http://127.0.0.1:7001".into()));
    assert_eq!(r.timeout, Duration::from_millis(250));
    assert_eq!((r.concurrency, r.retries), (64, 2));
    assert_eq!(s.upstreams["policy.review"].retries, 0);
    assert!(matches!(s.builder.profile, ctxpack_core::Profile::Full(_)));
    // Nothing given: the seed's defaults, retrieval from the index.
    let d = parse("").unwrap();
    assert_eq!(d, Settings::default());
    assert_eq!(d.builder.plan.default_budget, 24000);
}

#[test]
fn every_mistake_names_its_key() {
    for (text, want) in [
        (
            "[context]\ndefault-budget-tokens = \"lots\"",
            "ctxpack.toml: context.default-budget-tokens: invalid type: string \"lots\"",
        ),
        (
            "[context]\ndefault-budget-tokens = 0",
            "context.default-budget-tokens: must be at least 1",
        ),
        (
            "[context.section-budgets]\nrelevant-knowledge = 1.5",
            "context.section-budgets.relevant-knowledge: 1.5 is not in [0, 1]",
        ),
        (
            "[context.section-budgets]\nrelevant-knowledge = 0.6\ncurrent-task = 0.6",
            "context.section-budgets: the shares sum to 1.2, over 1",
        ),
        (
            "[context.section-budgets]\nknowledge = 0.1",
            "context.section-budgets.knowledge: not a section",
        ),
        ("[contxt]\n", "ctxpack.toml: contxt: unknown field `contxt`"),
        (
            "[upstreams.fetch]\ngrpc = \"http://a:1\"",
            "upstreams.fetch: not a capability; one of retrieve, expand-graph",
        ),
        (
            "[upstreams.retrieve]\ntimeout-ms = 5",
            "upstreams.retrieve: needs exactly one of `grpc` or `http`",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"a:1\"\nhttp = \"http://a:1\"",
            "upstreams.retrieve: needs exactly one",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"ftp://a:1\"",
            "upstreams.retrieve.grpc: `ftp://a:1`: needs http://host:port or https://host:port",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"http://a:1\"\nca-file = \"ca.pem\"",
            "upstreams.retrieve.grpc: certificates need an https:// address",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"https://a:1\"\ncert-file = \"c.pem\"",
            "upstreams.retrieve.cert-file: ",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"https://a:1\"\ncert-file = \"c.pem\"\nkey-file = \"k.pem\"",
            "upstreams.retrieve.cert-file: ",
        ),
        (
            "[upstreams.retrieve]\nhttp = \"https://a:1\"\nca-file = \"Cargo.toml\"",
            "upstreams.retrieve.ca-file: holds no certificate",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"http://a:1\"\nconcurrency = 0",
            "upstreams.retrieve.concurrency: must be at least 1",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntimeout-ms = -1",
            "upstreams.retrieve.timeout-ms: invalid value",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntoken-env = \"CTXPACK_NO_SUCH_VARIABLE\"",
            "upstreams.retrieve.token-env: `CTXPACK_NO_SUCH_VARIABLE` is not set",
        ),
        (
            "[upstreams.retrieve]\ngrpc = \"http://a:1\"\ntoken-file = \"no-such-file\"",
            "upstreams.retrieve.token-file: no-such-file",
        ),
        (
            "[limits]\nmax-connections = 0",
            "limits.max-connections: must be at least 1",
        ),
        (
            "[limits]\nmax-connections-per-client = 0",
            "limits.max-connections-per-client: must be at least 1",
        ),
        (
            "[limits]\nheader-timeout-ms = 0",
            "limits.header-timeout-ms: must be at least 1",
        ),
        (
            "[limits]\nrequests-per-second = -1.0",
            "limits.requests-per-second: must be 0",
        ),
        (
            "[limits]\nmax-instructions = 0",
            "limits.max-instructions: must be at least 1",
        ),
        (
            "[limits]\nmax-instuctions = 9",
            "limits.max-instuctions: unknown field",
        ),
        (
            "[tls]\ncert-file = \"no.pem\"",
            "tls: missing field `key-file`",
        ),
        (
            "[tls]\ncert-file = \"no.pem\"\nkey-file = \"no.key\"",
            "ctxpack.toml: tls.cert-file: no.pem",
        ),
        ("[auth]\nissuer = 7", "auth.issuer: invalid type"),
        ("[auth]\nisuer = \"x\"", "auth.isuer: unknown field"),
        (
            "[builder]\nprofile = \"ragg\"",
            "ctxpack.toml: builder.profile: unknown variant `ragg`",
        ),
        ("[service]\nlisten = \"here\"", "service.listen: invalid"),
        ("[service\n", "ctxpack.toml:1:"),
        (
            "[context]\ndefault-budget-tokens = 5\nwhat is this",
            "ctxpack.toml:3:",
        ),
    ] {
        let err = parse(text).unwrap_err();
        assert!(err.contains(want), "{text:?}:\n  got  {err}\n  want {want}");
    }
}

#[test]
fn tokenizer_files_are_read_relative_to_the_settings_and_named_when_wrong() {
    let dir = std::env::temp_dir().join(format!("ctxpack-tokenizers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("models")).unwrap();
    let file = dir.join("ctxpack.toml");
    // A rank file of the 256 single bytes: the smallest a file can be.
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let ranks: String = (0..=255u8)
        .map(|b| {
            let (hi, lo) = (usize::from(b >> 2), usize::from((b & 3) << 4));
            format!(
                "{}{}== {b}\n",
                char::from(alphabet[hi]),
                char::from(alphabet[lo])
            )
        })
        .collect();
    std::fs::write(dir.join("models/bytes.tiktoken"), ranks).unwrap();
    std::fs::write(
        dir.join("models/bad.json"),
        r#"{"model": {"type": "Unigram"}}"#,
    )
    .unwrap();
    let toml = "[[context.tokenizer-files]]\nname = \"bytes\"\npath = \"models/bytes.tiktoken\"\npattern = \"llama3\"\n";
    let s = Settings::parse(&file, toml).unwrap();
    assert_eq!(s.builder.tokenizers.len(), 1);
    assert_eq!(s.builder.tokenizers[0].name, "bytes");
    assert_eq!(s.builder.tokenizers[0].pattern.as_deref(), Some("llama3"));
    let bad = "[[context.tokenizer-files]]\nname = \"b\"\npath = \"models/bad.json\"\n";
    let e = Settings::parse(&file, bad).unwrap_err();
    assert_eq!(e.place, Place::Key("context.tokenizer-files[0]".into()));
    assert!(e.message.contains("Unigram"), "{e}");
    let missing = "[[context.tokenizer-files]]\nname = \"b\"\npath = \"models/none.json\"\n";
    let e = Settings::parse(&file, missing).unwrap_err();
    assert_eq!(
        e.place,
        Place::Key("context.tokenizer-files[0].path".into())
    );
    let no_pattern =
        "[[context.tokenizer-files]]\nname = \"b\"\npath = \"models/bytes.tiktoken\"\n";
    let e = Settings::parse(&file, no_pattern).unwrap_err();
    assert!(e.message.contains("names no pattern"), "{e}");
    assert_eq!(
        e.place,
        Place::Key("context.tokenizer-files[0].pattern".into())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn model_profiles_are_read_from_the_builders_table() {
    let file = std::env::temp_dir().join("ctxpack.toml");
    let toml = "[[builder.models]]\nname = \"house-7b\"\ntokenizer = \"o200k-base\"\ncontext-window = 32768\noutput-reserve = 4096\nmessage-overhead = 5\n";
    let s = Settings::parse(&file, toml).unwrap();
    assert_eq!(s.builder.models.len(), 1);
    assert_eq!(s.builder.models[0].name, "house-7b");
    assert_eq!(s.builder.models[0].context_window, 32_768);
    let typo = toml.replace("output-reserve", "output-reserved");
    let e = Settings::parse(&file, &typo).unwrap_err();
    assert_eq!(
        e.place,
        Place::Key("builder.models[0].output-reserved".into())
    );
    assert!(e.message.contains("output-reserved"), "{e}");
}
