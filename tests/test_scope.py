"""`Scope` (vault/tokens.py), the rule every vault face keeps, without a database: what a token
for some primary namespaces may touch (those and their shadows, nothing else, never a
malformed name), how a scope is built from a list or a comma-separated string, and how it
describes itself in refusals."""

import hashlib

import pytest

from memory_platform.vault.tokens import Scope, hash_secret, parse_namespaces

WORK = Scope.of(["work"])


@pytest.mark.parametrize("namespace", ["work", "work__dream", "work__ideas"])
def test_a_scope_permits_its_primaries_and_their_shadows(namespace):
    assert WORK.permits(namespace)


@pytest.mark.parametrize("namespace", [
    "personal", "personal__dream", "personal__ideas",  # another primary and its shadows
    "work2", "wor", "awork", "work__x", "work__dream__ideas",  # near misses
    "Work", "work\n", " work", "", "work__", "__work",  # malformed: never permitted
])
def test_a_scope_refuses_everything_else(namespace):
    assert not WORK.permits(namespace)


def test_the_unrestricted_scope_permits_every_name_and_says_so():
    everything = Scope.everything()
    assert everything.unrestricted and everything.primaries is None
    assert everything.permits("personal") and everything.permits("anything__ideas")
    assert everything.describe() == "every namespace"
    assert not WORK.unrestricted


def test_a_scope_of_several_primaries():
    scope = Scope.of("work, personal,work,,")
    assert scope.primaries == frozenset({"work", "personal"})
    assert scope.permits("personal__dream") and scope.permits("work__ideas")
    assert not scope.permits("acme")
    assert scope.describe() == "personal, work"
    assert scope == Scope.of(["personal", "work"])


def test_parse_namespaces_keeps_order_drops_repeats_and_blanks():
    assert parse_namespaces("b, a ,b,,c") == ["b", "a", "c"]
    assert parse_namespaces(["x", " y "]) == ["x", "y"]


@pytest.mark.parametrize(("given", "message"), [
    ("work__dream", r"^'work__dream' is a shadow namespace; name its primary 'work' "
                    r"\(its shadows come with it\)$"),
    (["work__ideas"], "^'work__ideas' is a shadow namespace"),
    ("", "^name at least one namespace, e.g. --namespaces work,personal$"),
    (" , ,", "^name at least one namespace"),
    ([], "^name at least one namespace"),
    ("Bad Name", "^invalid namespace 'Bad Name'"),
])
def test_parse_namespaces_refuses_with_a_reason(given, message):
    with pytest.raises(ValueError, match=message):
        parse_namespaces(given)
    with pytest.raises(ValueError, match=message):
        Scope.of(given)


def test_hash_secret_is_the_sha256_of_the_utf8_secret():
    assert hash_secret("mp_x") == hashlib.sha256(b"mp_x").hexdigest()
    assert hash_secret("mp_é") == hashlib.sha256("mp_é".encode()).hexdigest()
