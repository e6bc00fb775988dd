//! The docs a user reads say what the code does: the README's Rust
//! quickstart is the example that runs, every relative link leads to a
//! file, and the README stays a newcomer's page.

use std::path::{Path, PathBuf};

/// The README's Rust quickstart, compiled here as it is written, its
/// `assemble` run on the scenario it packs.
#[allow(dead_code)]
mod quickstart {
    include!("../../crates/ctxpack-core/examples/quickstart.rs");

    #[test]
    fn the_readme_rust_quickstart_gives_the_rust_hosts_snapshot_id() {
        let root = ctxpack_conformance::root();
        let scenario = root.join("scenarios/readme-quickstart.json");
        let scenario =
            ctxpack_scenario::scenario::load(&scenario).unwrap_or_else(|e| panic!("{e}"));
        let builder = Builder::new(scenario.config.clone()).expect("the builder");
        let pack = assemble(&builder, &scenario.request).expect("the pack");
        let expected = std::fs::read_to_string(root.join("expected/readme-quickstart.json"))
            .expect("the expected outcome");
        let expected: serde_json::Value = serde_json::from_str(&expected).expect("JSON");
        let want = &expected["reply"]["pack"];
        assert_eq!(
            Some(pack.snapshot.id.as_str()),
            want["snapshot"]["id"].as_str()
        );
        assert_eq!(Some(pack.text.as_str()), want["text"].as_str());
    }
}

fn repo() -> PathBuf {
    ctxpack_conformance::root()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of `markdown` in `language`, each without its fences.
fn blocks<'a>(markdown: &'a str, language: &str) -> Vec<&'a str> {
    let open = format!("```{language}\n");
    let mut found = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let end = body
            .find("```")
            .unwrap_or_else(|| panic!("an unclosed ```{language} block"));
        found.push(&body[..end]);
        rest = &body[end + 3..];
    }
    found
}

#[test]
fn the_readme_rust_quickstart_is_the_example_word_for_word() {
    let readme = read(&repo().join("README.md"));
    let example = read(&repo().join("crates/ctxpack-core/examples/quickstart.rs"));
    assert_eq!(blocks(&readme, "rust"), vec![example.as_str()]);
}

#[test]
fn the_readme_is_a_newcomers_page() {
    let readme = read(&repo().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; depth belongs in docs/"
    );
    // The two set-up commands, and no third.
    let setup = blocks(&readme, "sh")[0];
    let commands: Vec<_> = setup
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
}

/// The relative links of a markdown file: `[text](target)`, `#anchor` cut.
fn links(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = markdown;
    while let Some(i) = rest.find("](") {
        let tail = &rest[i + 2..];
        let Some(end) = tail.find(')') else { break };
        let target = &tail[..end];
        let path = target.split('#').next().unwrap_or_default();
        if !path.is_empty() && !target.contains("://") && !target.contains(' ') {
            found.push(path.to_owned());
        }
        rest = &tail[end..];
    }
    found
}

#[test]
fn every_relative_link_leads_to_a_file() {
    let repo = repo();
    let mut pages = vec![repo.join("README.md"), repo.join("bench/README.md")];
    let book = repo.join("docs/src");
    for entry in std::fs::read_dir(&book).expect("docs/src") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let dir = page.parent().unwrap_or(&repo);
        for link in links(&read(page)) {
            if !dir.join(&link).exists() {
                broken.push(format!("{}: {link}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
    // A chapter's link out of the book is a dead link in the built book:
    // mdBook turns `../x.md` into `../x.html`, which it never writes.
    let outside: Vec<String> = pages
        .iter()
        .filter(|p| p.starts_with(&book))
        .flat_map(|p| links(&read(p)).into_iter().map(move |l| (p, l)))
        .filter(|(_, link)| link.contains('/'))
        .map(|(p, link)| format!("{}: {link}", p.display()))
        .collect();
    assert!(outside.is_empty(), "links out of the book: {outside:#?}");
    // Every chapter is in the book's summary, and the summary names no other.
    let summary = read(&book.join("SUMMARY.md"));
    let mut listed = links(&summary);
    listed.sort();
    let mut chapters: Vec<String> = pages
        .iter()
        .filter(|p| p.starts_with(&book))
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|name| name != "SUMMARY.md")
        .collect();
    chapters.sort();
    assert_eq!(listed, chapters);
}

/// The stages as `text` numbers them: each `N. name` (or `N, M and K.
/// a, b, c`) that `head` begins, in the order written.
fn numbered_stages(text: &str, head: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix(head) else {
            continue;
        };
        let Some((numbers, names)) = rest.split_once(". ") else {
            continue;
        };
        let numbers: Option<Vec<u32>> = numbers
            .split([',', ' '])
            .filter(|n| !n.is_empty() && *n != "and")
            .map(|n| n.parse().ok())
            .collect();
        let Some(numbers) = numbers else {
            continue;
        };
        let names = names.split([':', '—']).next().unwrap_or("");
        let names: Vec<String> = names
            .split(',')
            .map(|n| n.trim().trim_matches('*').to_owned())
            .collect();
        assert_eq!(numbers.len(), names.len(), "{line}");
        out.extend(numbers.into_iter().zip(names));
    }
    out
}

#[test]
fn the_book_and_builder_run_name_the_stages_in_one_order() {
    let core = repo().join("crates/ctxpack-core/src");
    let run = numbered_stages(&read(&core.join("builder.rs")), "// ");
    let book = numbered_stages(&read(&repo().join("docs/src/pipeline.md")), "");
    let lib = read(&core.join("lib.rs"));
    let table: Vec<(u32, String)> = lib
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.strip_prefix("//! | ")?.split(" | ").collect();
            let n = cells.first()?.parse().ok()?;
            Some((n, cells.get(1)?.trim_matches('`').to_owned()))
        })
        .collect();
    assert_eq!(run.len(), 11, "{run:?}");
    let numbers: Vec<u32> = run.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=11).collect::<Vec<_>>(), "{run:?}");
    assert_eq!(book, run, "the book's pipeline chapter and builder.rs");
    assert_eq!(table, run, "the crate's stage table and builder.rs");
    for (_, name) in &run {
        assert!(
            core.join(format!("{name}.rs")).is_file(),
            "no module {name}"
        );
    }
}

/// The book's table of built-in model profiles is the code's.
#[test]
fn the_books_model_table_is_the_built_in_one() {
    use ctxpack_core::{ImageRule, Tokenizer, built_in_models};
    let page = read(&repo().join("docs/src/models.md"));
    let rows: Vec<Vec<String>> = page
        .lines()
        .skip_while(|l| !l.starts_with("| model | tokenizer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace(['`', ','], ""))
                .collect()
        })
        .collect();
    let want: Vec<Vec<String>> = built_in_models()
        .into_iter()
        .map(|m| {
            let tokenizer = match m.tokenizer {
                Tokenizer::O200kBase => "o200k-base".to_owned(),
                Tokenizer::Cl100kBase => "cl100k-base".to_owned(),
                Tokenizer::Named(file) => format!("file {file}"),
                Tokenizer::CharsPerToken(n) => format!("{n} characters a token"),
                Tokenizer::Host(_) => "the host".to_owned(),
            };
            let images = match m.images {
                None => "—".to_owned(),
                Some(ImageRule::Tiles(t)) => format!("tiles {} + {}", t.base, t.tile),
                Some(ImageRule::Patches(x)) => format!("patches × {x}"),
                Some(ImageRule::Pixels) => "pixels".to_owned(),
                Some(ImageRule::GeminiTiles) => "Gemini's tiles".to_owned(),
                Some(ImageRule::None) => "none".to_owned(),
            };
            vec![
                m.name,
                tokenizer,
                m.context_window.to_string(),
                m.output_reserve.to_string(),
                m.message_overhead.to_string(),
                m.reply_overhead.to_string(),
                images,
            ]
        })
        .collect();
    assert_eq!(rows, want);
}
