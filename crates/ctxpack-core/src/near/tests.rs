use super::*;

#[test]
fn edits_count_insertions_deletions_and_changes() {
    assert_eq!(edits("", ""), 0);
    assert_eq!(edits("abc", ""), 3);
    assert_eq!(edits("", "ab"), 2);
    assert_eq!(edits("kitten", "sitting"), 3);
    assert_eq!(edits("gpt4o", "gpt-4o"), 1);
    assert_eq!(edits("ünï", "uni"), 2);
}

#[test]
fn the_nearest_are_the_names_begun_then_the_fewest_edits_away() {
    let names = ["llama3", "qwen", "qwen3.5", "o200k", "cl100k", "tekken"];
    assert_eq!(nearest("llama-3", &names), ["llama3", "cl100k", "qwen"]);
    assert_eq!(nearest("qwen3", &names), ["qwen3.5", "qwen", "llama3"]);
    assert_eq!(nearest("x", &names[..2]), ["qwen", "llama3"]);
}
