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


def test_workspace_names_the_definitions_module():
    text = (REPO / "workspace.yaml").read_text()
    assert "python_module: memory_platform.definitions" in text


def test_readme_configuration_table_is_the_settings_table():
    from memory_platform.settings import markdown_table

    readme = (REPO / "README.md").read_text()
    found = re.search(r"<!-- settings:begin -->\n(.*?)\n<!-- settings:end -->", readme, re.S)
    assert found, "README.md lost its settings table markers"
    assert found.group(1).strip() == markdown_table(), (
        "README's configuration table is out of date: paste `python -m "
        "memory_platform.settings` between the settings markers")


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
