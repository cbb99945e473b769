"""The probe of 2026-12-03 (docs/security.md): a mem0 export holding a number of more than
4,300 digits (valid JSON, which Python's int conversion refuses) is a problem with its file
and line, and the records before it are read; it used to abort the import with Python's
bare "Exceeds the limit (4300 digits)" naming no file."""

from memory_platform.vault.imports import mem0
from memory_platform.vault.imports.records import Problem, Record


def test_a_huge_number_is_a_problem_of_its_record(tmp_path):
    path = tmp_path / "mem0.json"
    path.write_text('[{"memory": "the work api listens on 8081"},\n'
                    '{"memory": "x", "created_at": ' + "9" * 5000 + "}]")
    items = list(mem0.read(path))
    assert [i.text for i in items if isinstance(i, Record)] == ["the work api listens on 8081"]
    [problem] = [i for i in items if isinstance(i, Problem)]
    assert "mem0.json:2" in str(problem) and "digits" in str(problem), problem
