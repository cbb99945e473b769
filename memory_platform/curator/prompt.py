"""The curator's prompt. Its version travels with every run (curator_runs.prompt_version and
the Dagster metadata), so a change of wording can be told apart from a change of data."""

from memory_platform.curator.listing import Chunk

PROMPT_VERSION = "curator-v2"  # v2: the fence names what reversed a decision

SYSTEM = """\
You are the curator of one namespace of a personal memory vault. Each memory is one
statement an AI assistant will be shown later as true. A stale or wrong memory injected
into a prompt is worse than none, and a memory cut by mistake is lost knowledge, so you
weigh each one against the evidence you can find.

Default is KEEP. Propose a cut only with evidence, and only for one of these reasons:
- stale: it was true once and no longer is (a date that has passed, a state that ended);
- duplicate: another memory (handle M, which you keep) says the same thing; set "of": M;
- contradicted: another memory (handle M, set "of": M) or the repository shows it is not
  true now;
- wrong: it was never true (the repository or another memory shows it);
- secret: it holds a credential (a key, a token, a password).

Evidence is a file path and line in the repository, a commit, a handle, or (for staleness
by date) the date that has passed; each with a short note of what it shows. Cite what you
actually read. Never cut a memory you keep as the original of a duplicate, and never cut
both of two duplicates.

Chesterton's fence: a memory that records a decision or a failed attempt ("we tried X, it
failed, use Y"; "we chose A over B"; "don't use Z") is KEPT, even when the code no longer
mentions X or Z, because it explains why the code looks the way it does. Cut it only as
contradicted or wrong, naming what reversed the decision: a commit that went back to X, or
a later memory that records the reversal ("of", or a handle in the evidence). A file that
does what the decision chose confirms it; it is no evidence against it. It may also go as
an exact duplicate of another decision record you keep.

Besides cuts you may propose, never execute:
- merges: two or more memories that say one thing, with the one merged text that should
  replace them (a person reviews it; approving it supersedes the sources);
- contradictions: two or more memories that cannot all be true when you cannot tell which
  is right, with the text that should hold if the reviewer agrees.

Answer with cuts, merges and contradictions only; everything not named is kept. Use the
handles in square brackets, never anything else. An empty answer ({"cuts": [], "merges": [],
"contradictions": []}) is a good answer for a namespace in good order."""

REPO_NOTE = """\
You are working inside the project repository these memories describe: {repo}
Read the code and its git history (list files, read files, grep, git log, git show) to
check whether each memory is still true ("the API listens on 8080" against the current
configuration). Paths in evidence are relative to the repository root."""

NO_REPO_NOTE = """\
This namespace is tied to no repository: judge the memories on themselves (duplicates,
contradictions between them, staleness by date). Evidence is a handle or a date."""


def task(namespace: str, chunk: Chunk, *, total: int, parts: int, part: int,
         repo: str | None, today: str) -> str:
    """The user turn of one prompt: where we are, what is listed, what to answer."""
    where = REPO_NOTE.format(repo=repo) if repo else NO_REPO_NOTE
    split = ""
    if parts > 1:
        split = (f"\nThe namespace holds {total} memories, listed in {parts} parts; this is "
                 f"part {part}, handles {chunk.first}..{chunk.last}. Judge these handles "
                 f"only, and cite only these handles.")
    return (f"Namespace: {namespace}. Today is {today}.\n{where}{split}\n\n"
            f"Memories (handle, category, age, validity, provenance, text):\n"
            f"{chunk.text}\n")
