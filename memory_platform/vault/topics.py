"""Category and topic of a memory, by rules: cheap, deterministic, no model.

Every write path labels a memory here (vault.memories.add, the scoped REST/MCP writes, the
dream's staging when the model named no topic), so this sits in the vault, below the
dream; recall's classifier (recall/classify.py) adds an LLM for the memories these rules
are unsure of, when one is configured, and backfills memories written before topics.

    classify("We decided to drop SQLite for PostgreSQL")
        -> Classification(category="decision", topic="database", confident=True, ...)
    classify("Lunch was good")
        -> Classification(category="episode", topic="unsorted", confident=False, ...)

Rules:
- A category or topic the writer gave (a person, the dream's model) is kept.
- Category: the first rule that matches, in order decision, feedback, episode (a dated
  past event), reference (a URL, a path, where to find something), user (about the
  person), project (facts of a codebase or service).
- Topic: an existing topic of the namespace whose words all appear in the text (the most
  specific first), else the theme of the lexicon below with most matching words, else the
  category's general topic when the category is certain.
- When no category rule matches and none was given, the memory is an `episode` with topic
  `unsorted` (confident=False): better an unsorted episode than a wrong topic.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

UNSORTED = "unsorted"
# Where a memory of a known category but no recognisable theme goes.
GENERAL_TOPICS = {"user": "preferences", "feedback": "working-style",
                  "project": "project-facts", "reference": "references",
                  "decision": "decisions", "episode": UNSORTED}

_CATEGORY_RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("decision", re.compile(
        r"(?i)\b(?:decided|decision|chose|chosen|opted|settled on|went with|going with|"
        r"agreed (?:to|on)|switch(?:ed|ing) (?:from \S+ )?to|we(?:'ll| will) use|"
        r"instead of)\b")),
    ("feedback", re.compile(
        r"(?i)\b(?:the assistant|claude|you should|answers?|responses?|replies|reply|"
        r"explain(?:ing|s)?|commit messages?|code reviews?|wants? (?:short|concise|"
        r"detailed|terse)|don't (?:add|use|write)|never (?:add|use|write)|"
        r"always (?:add|use|write|run))\b")),
    ("episode", re.compile(
        r"(?i)\b(?:on|in the week of) \d{4}-\d{2}-\d{2}\b.*\b(?:happened|met|fixed|shipped|"
        r"released|migrated|broke|failed|deployed|launched|moved|started|finished|"
        r"presented|visited|had)\b")),
    ("reference", re.compile(
        r"(?i)(?:https?://|\bwww\.|(?:^|\s)~?/[\w.-]+/|\b(?:docs?|documentation|runbook|"
        r"dashboard|wiki|handbook|spec) (?:is|are|live|lives)\b|\bask \w+ about\b|"
        r"\bcan be found\b|\bis documented\b)")),
    ("user", re.compile(
        r"(?i)\b(?:i|i'm|my|the user|(?:he|she|they) (?:prefers?|likes?|lives?|works?))\b|"
        r"\b(?:prefers?|likes?|dislikes?|loves?|hates?|lives in|works (?:at|as|for)|"
        r"is allergic|birthday|favou?rite|speaks|grew up)\b")),
    ("project", re.compile(
        r"(?i)\b(?:project|repo(?:sitory)?|service|codebase|api|database|deploy(?:s|ed)?|"
        r"build|ci|port|version|runs on|uses|config(?:uration)?|module|package|schema|"
        r"endpoint|server|branch|release|library|framework)\b")),
)

# Themes: topic slug -> words that point at it. Checked on word boundaries, case folded.
LEXICON: dict[str, tuple[str, ...]] = {
    "database": ("postgres", "postgresql", "pgvector", "sqlite", "mysql", "sql", "database",
                 "databases", "migration", "migrations", "duckdb", "redis", "schema"),
    "testing": ("pytest", "unittest", "test", "tests", "testing", "fixture", "fixtures",
                "coverage", "playwright"),
    "deployment": ("deploy", "deploys", "deployed", "deployment", "docker", "kubernetes",
                   "k8s", "helm", "staging", "production", "release", "releases", "ci"),
    "python": ("python", "pip", "venv", "poetry", "ruff", "mypy", "pyproject", "uv"),
    "rust": ("rust", "cargo", "crate", "crates", "clippy"),
    "javascript": ("javascript", "typescript", "node", "npm", "react", "vite", "eslint"),
    "git": ("git", "github", "gitlab", "branch", "branches", "commit", "commits", "rebase",
            "merge"),
    "editor": ("vim", "neovim", "emacs", "vscode", "editor", "ide", "tmux", "terminal"),
    "llm": ("llm", "llms", "claude", "gpt", "openai", "anthropic", "prompt", "prompts",
            "embedding", "embeddings", "ollama"),
    "api": ("api", "rest", "endpoint", "endpoints", "http", "fastapi", "graphql", "grpc"),
    "security": ("auth", "oauth", "token", "tokens", "password", "passwords", "ssh", "tls",
                 "certificate", "permissions"),
    "infrastructure": ("server", "servers", "aws", "gcp", "azure", "cloud", "terraform",
                       "nginx", "dns", "vpn"),
    "documentation": ("docs", "documentation", "readme", "wiki", "runbook", "handbook"),
    "food": ("coffee", "tea", "food", "vegetarian", "vegan", "allergic", "lunch", "dinner",
             "breakfast"),
    "schedule": ("meeting", "meetings", "standup", "calendar", "weekly", "morning",
                 "evening", "timezone", "holiday", "vacation"),
    "people": ("team", "colleague", "manager", "designer", "engineer", "teammate"),
    "writing-style": ("concise", "verbose", "terse", "tone", "bullet", "bullets", "markdown",
                      "formatting", "emoji"),
}
_WORD = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*")


@dataclass(frozen=True)
class Classification:
    category: str
    topic: str
    confident: bool
    reason: str


def slugify(value: str, max_length: int = 48) -> str:
    """A topic slug: lowercase ASCII letters and digits joined by '-', at most 48 long.
    An empty result is an error (a topic names something)."""
    words = re.findall(r"[a-z0-9]+", value.lower())
    slug = "-".join(words)[:max_length].strip("-")
    if not slug:
        raise ValueError(f"{value!r} makes no topic: use letters or digits")
    return slug


def _words(text: str) -> set[str]:
    lowered = text.lower()
    return set(_WORD.findall(lowered)) | set(re.findall(r"[a-z0-9]+", lowered))


def _category(text: str) -> str | None:
    for name, pattern in _CATEGORY_RULES:
        if pattern.search(text):
            return name
    return None


def _topic(text: str, known_topics: Iterable[str]) -> tuple[str | None, str]:
    words = _words(text)
    known = sorted({t for t in known_topics if t and t != UNSORTED},
                   key=lambda t: (-len(t.split("-")), t))
    for topic in known:
        if all(part in words for part in topic.split("-")):
            return topic, f"names the existing topic {topic!r}"
    scores = {theme: sum(1 for w in terms if w in words) for theme, terms in LEXICON.items()}
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    best = ranked[0]
    if best[1] > 0:
        return best[0], f"{best[1]} word(s) of the {best[0]!r} theme"
    return None, "no theme recognised"


def classify(text: str, *, category: str | None = None, topic: str | None = None,
             known_topics: Iterable[str] = ()) -> Classification:
    """The category and topic of `text` (see the module docstring). `category`/`topic`
    given by the writer are kept; `known_topics` are the namespace's existing topics."""
    if not text or not text.strip():
        raise ValueError("a memory needs some text")
    given_category = category is not None
    if category is None:
        category = _category(text)
    if topic is not None:
        topic = slugify(topic)
        if category is None:
            return Classification("episode", topic, False,
                                  "topic given; no category rule matched")
        return Classification(category, topic, True, "topic given")
    if category is None:
        return Classification("episode", UNSORTED, False, "no category rule matched")
    found, why = _topic(text, known_topics)
    if found is None:
        found = GENERAL_TOPICS[category]
        why = f"the general topic of {category!r}"
    how = "category given" if given_category else f"category rule {category!r}"
    return Classification(category, found, True, f"{how}; {why}")
