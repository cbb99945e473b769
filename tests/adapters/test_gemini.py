import json
import zipfile
from collections import Counter
from datetime import timedelta
from pathlib import Path

from memory_platform.adapters.base import KINDS, ROLES, Conversation, Event, ParseIssue
from memory_platform.adapters.gemini import adapter, html_to_text, parse_local_time

APP = "https://gemini.google.com/app/"


def split(items):
    events = [i for i in items if isinstance(i, Event)]
    convs = [i for i in items if isinstance(i, Conversation)]
    issues = [i for i in items if isinstance(i, ParseIssue)]
    return events, convs, issues


def check_invariants(items):
    announced = set()
    ids = set()
    for item in items:
        if isinstance(item, Conversation):
            assert item.native_id not in announced  # announced once per file
            announced.add(item.native_id)
        elif isinstance(item, Event):
            assert item.native_id not in ids, item.native_id
            ids.add(item.native_id)
            assert item.occurred_at is not None
            assert item.occurred_at.utcoffset() == timedelta(0)
            assert item.role in ROLES and item.kind in KINDS
            assert "\x00" not in item.text
            assert item.conversation_id in announced
            assert item.parent_id is None or item.parent_id in ids
            if not item.text:
                assert item.attrs.get("empty_reason"), item


def parse(path):
    items = list(adapter.parse(Path(path)))
    check_invariants(items)
    return items


def row(title, time="2026-03-10T18:00:00.000Z", html=None, conv=None, **extra):
    record = {"header": "Gemini Apps", "title": title, "time": time,
              "products": ["Gemini Apps"], "activityControls": ["Gemini Apps Activity"]}
    if html is not None:
        record["safeHtmlItem"] = [{"html": h} for h in ([html] if isinstance(html, str) else html)]
    if conv is not None:
        record["details"] = [{"name": APP + conv, "url": APP + conv}]
    record.update(extra)
    return record


def write(tmp_path, data, name="MyActivity.json"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


# --- the real sample ------------------------------------------------------------------

def test_sample(samples_dir):
    path = samples_dir / "gemini-takeout/MyActivity.json"
    events, convs, issues = split(parse(path))
    # 8 rows: 5 prompts (4 with a response), 1 feedback row, 1 broken time, 1 Search row
    assert Counter((e.role, e.kind) for e in events) == {
        ("user", "message"): 5, ("assistant", "message"): 4, ("other", "meta"): 1
    }
    assert len(issues) == 1
    assert issues[0].line == 7 and "record 7" in issues[0].message
    assert "not a time" in issues[0].message
    assert adapter.skipped_foreign[str(path)] == 1  # the Search row, silently skipped
    assert not any("pizza" == e.text for e in events)
    # no details urls: grouped by UTC day and flagged
    assert [c.native_id for c in convs] == ["day:2026-03-10", "day:2026-03-12"]
    assert all(e.attrs["conversation_inferred"] for e in events)
    assert all(e.native_id.startswith("noconv:2026-03-1") for e in events)

    prompts = {e.text: e for e in events if e.role == "user"}
    assert set(prompts) == {
        "And how long does the dough need to rest?",
        "Give me a recipe for Neapolitan pizza dough",
        "What is the capital of Australia?",
        "A question that got no stored response",
        "Wie spät ist es in Tokio?",  # the German-localized row
    }
    german = prompts["Wie spät ist es in Tokio?"]
    assert german.conversation_id == "day:2026-03-12" and german.line == 6
    assert german.raw["title"] == "Eingegebener Prompt: Wie spät ist es in Tokio?"
    assert prompts["A question that got no stored response"].attrs["no_response"] is True

    responses = {e.parent_id: e for e in events if e.role == "assistant"}
    recipe = responses[prompts["Give me a recipe for Neapolitan pizza dough"].native_id]
    assert recipe.text == "Here is a simple recipe:\n\n- 500 g flour\n- 325 g water\n\nMix & rest."
    assert "ignored" not in recipe.text and "<script>" in recipe.raw["safeHtmlItem"][0]["html"]
    assert recipe.author == "gemini" and recipe.native_id.endswith(":response")
    assert responses[german.native_id].text == "Es ist 17 Uhr."
    rest = responses[prompts["And how long does the dough need to rest?"].native_id]
    assert rest.text == "At least 24 hours in the fridge."
    meta = next(e for e in events if e.kind == "meta")
    assert meta.text == "Gave feedback: Good response" and meta.line == 5
    assert prompts["What is the capital of Australia?"].native_id == (
        "noconv:2026-03-10T21:30:00Z:50daaeeb968d880e:prompt"
    )


def test_discover_by_content(samples_dir, tmp_path):
    assert list(adapter.discover(samples_dir)) == [samples_dir / "gemini-takeout/MyActivity.json"]
    takeout = tmp_path / "Takeout"
    gemini = write(takeout, [row("Prompted hi", html="<p>hey</p>")],
                   "Meine Aktivitäten/Gemini-Apps/MeineAktivitäten.json")
    write(takeout, [{"header": "Suche", "title": "Gesucht nach Pizza",
                     "time": "2026-03-10T17:00:00Z", "products": ["Suche"]}],
          "Meine Aktivitäten/Suche/MeineAktivitäten.json")
    write(takeout, {"photoTakenTime": {"timestamp": "1"}}, "Google Fotos/img.jpg.json")
    html = takeout / "My Activity/Gemini Apps/MyActivity.html"
    html.parent.mkdir(parents=True)
    html.write_text(HTML, encoding="utf-8")
    (takeout / "archive_browser.html").write_text("<html>Gemini Apps</html>")
    assert list(adapter.discover(tmp_path)) == [gemini, html]


def test_takeout_zip(tmp_path):
    path = tmp_path / "takeout-20260301T000000Z-001.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("Takeout/My Activity/Gemini Apps/MyActivity.json",
                         json.dumps([row("Prompted hi", html="<p>hey</p>", conv="c1")]))
        archive.writestr("Takeout/My Activity/Search/MyActivity.json",
                         json.dumps([{"header": "Search", "title": "Searched for x",
                                      "time": "2026-03-10T17:00:00Z", "products": ["Search"]}]))
    assert list(adapter.discover(tmp_path)) == [path]
    events, convs, issues = split(parse(path))
    assert issues == [] and [c.native_id for c in convs] == ["c1"]
    assert [e.role for e in events] == ["user", "assistant"]


# --- row rules ------------------------------------------------------------------------

def test_conversation_ids_drafts_and_localized_verbs(tmp_path):
    data = [
        row("Prompted two drafts", html=["<p>first</p>", "<p>second</p>"], conv="abc"),
        row("Requête saisie : Bonjour", html="<p>Salut</p>", conv="abc",
            time="2026-03-10T18:01:00Z"),
        row("Prompted ", time="2026-03-10T18:02:00Z", imageFile="image.png", conv="abc"),
        row("Prompt eingegeben als Bild", html="<p>Ein Bild</p>", time="2026-03-10T18:03:00Z"),
        row("Selected preferred draft", time="2026-03-10T18:04:00Z", conv="abc"),
        row("Prompted multi", html="<p>x</p>", time="2026-03-10T18:05:00Z",
            details=[{"url": APP + "one"}, {"url": APP + "two"}]),
    ]
    events, convs, issues = split(parse(write(tmp_path, data)))
    assert issues == []
    assert [c.native_id for c in convs] == ["abc", "day:2026-03-10", "one"]
    drafts = events[1]
    assert drafts.text == "first\n\nsecond" and drafts.attrs["drafts"] == 2
    assert events[0].native_id.startswith("abc:2026-03-10T18:00:00Z:")
    french = events[2]
    # generic rule: "<verb>: <prompt>" within the first 40 characters of a prompt row
    assert french.text == "Bonjour" and french.attrs["prompt_extraction"] == "generic"
    image = events[4]
    assert image.text == "" and image.attrs["empty_reason"].startswith("no prompt text")
    assert image.attrs["files"] == ["image.png"] and image.attrs["no_response"]
    unknown = events[5]
    assert unknown.text == "Prompt eingegeben als Bild"
    assert unknown.attrs["prompt_extraction"] == "full title"
    assert unknown.conversation_id == "day:2026-03-10"
    meta = events[7]
    assert meta.kind == "meta" and meta.role == "other" and meta.conversation_id == "abc"
    assert events[8].attrs["other_conversation_ids"] == ["two"]


def test_duplicate_rows_and_colliding_ids(tmp_path):
    same = row("Prompted again", html="<p>a</p>")
    other = row("Prompted again", html="<p>b</p>", time="2026-03-10T18:00:00.400Z")
    events, _, issues = split(parse(write(tmp_path, [same, same, other])))
    assert issues == []
    # an identical row is the same turn; a different row in the same second gets a suffix
    assert [e.native_id.rsplit(":", 1)[0] for e in events][::2] == [
        events[0].native_id.rsplit(":", 1)[0],
        events[0].native_id.rsplit(":", 1)[0] + "~2",
    ]


def test_bad_and_future_times_and_nul(tmp_path):
    data = [
        row("Prompted ok\x00nul", html="<p>fine\x00</p>"),
        row("Prompted broken", time="yesterday"),
        row("Prompted later", time="2999-01-01T00:00:00Z", html="<p>x</p>"),
        "not an object",
        row("Prompted no time", time=None),
    ]
    events, _, issues = split(parse(write(tmp_path, data)))
    # the HTML parser already drops NUL from markup; prompt text gets the visible marker
    assert [e.text.rstrip("\ufffd") for e in events] == ["ok\ufffdnul", "fine"]
    assert [i.line for i in issues] == [2, 3, 4, 5]
    assert "future" in issues[1].message and "record 4" in issues[2].message


def test_non_gemini_only_file_says_so(tmp_path):
    data = [{"header": "YouTube", "title": "Watched x", "time": "2026-03-10T17:00:00Z",
             "products": ["YouTube"]}]
    items = parse(write(tmp_path, data))
    assert len(items) == 1 and "no Gemini Apps rows" in items[0].message


def test_wrong_format_empty_and_broken(samples_dir, tmp_path):
    items = parse(samples_dir / "chatgpt/conversations.json")
    assert len(items) == 1 and "is this a ChatGPT export?" in items[0].message
    empty = tmp_path / "MyActivity.json"
    empty.write_bytes(b"")
    assert [i.message for i in parse(empty)] == ["empty file"]
    text = json.dumps([row("Prompted one", html="<p>1</p>"), row("Prompted two")])
    broken = write(tmp_path, None, "broken.json")
    broken.write_text(text[:-1] + ', {"title": "Prompted three", "time": ]')
    events, _, issues = split(parse(broken))
    assert [e.text for e in events] == ["one", "1", "two"]
    assert len(issues) == 1 and issues[0].line == 3 and "record 3" in issues[0].message


def test_truncated_zip(tmp_path):
    path = tmp_path / "takeout.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("Takeout/My Activity/Gemini Apps/MyActivity.json",
                         json.dumps([row(f"Prompted {i}", html="<p>x</p>") for i in range(99)]))
    path.write_bytes(path.read_bytes()[:200])
    items = parse(path)
    assert len(items) == 1 and isinstance(items[0], ParseIssue) and items[0].file == str(path)


# --- HTML variant ---------------------------------------------------------------------

def cell(product, content, caption=None):
    """One My Activity block as Takeout writes it (Material Design Lite classes)."""
    parts = [
        '<div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">',
        '<div class="header-cell mdl-cell mdl-cell--12-col">'
        f'<p class="mdl-typography--title">{product}<br></p></div>',
        '<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">'
        f"{content}</div>",
        '<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1 '
        'mdl-typography--text-right"></div>',
    ]
    if caption is not None:
        parts.append(
            '<div class="content-cell mdl-cell mdl-cell--12-col mdl-typography--caption">'
            f"<b>Products:</b><br>&emsp;{product}<br>{caption}</div>"
        )
    return "\n".join(parts) + "</div></div>\n"


LINK = '<a href="https://gemini.google.com/app/abc123">https://gemini.google.com/app/abc123</a>'
HTML = (
    "<html><head><style>.mdl-grid{}</style></head><body><div class=\"mdl-grid\">\n"
    + cell("Gemini Apps",
           "Prompted Write a haiku about &lt;rust&gt;<br>Mar 10, 2026, 6:12:00&#8239;PM CET<br>"
           "<p>Red flakes on <b>old</b> iron</p><ul><li>line two</li></ul><script>x()</script>",
           LINK)
    + cell("Gemini Apps", "Gave feedback: Good response<br>Mar 10, 2026, 6:13:00 PM UTC<br>", "")
    + cell("Search",
           'Searched for <a href="https://www.google.com/search?q=pizza">pizza</a><br>'
           "Mar 10, 2026, 5:00:00 PM CET<br>", "")
    + cell("Gemini Apps",
           "Prompted multi<br>line prompt<br>10 Mar 2026, 19:00:00 GMT+01:00<br>Short answer.")
    + cell("Gemini Apps", "Prompted no stamp here")
    + "</div></body></html>\n"
)


def test_html_variant(tmp_path):
    path = tmp_path / "MyActivity.html"
    path.write_text(HTML, encoding="utf-8")
    events, convs, issues = split(parse(path))
    assert [c.native_id for c in convs] == ["abc123", "day:2026-03-10"]
    assert [(e.role, e.kind, e.line) for e in events] == [
        ("user", "message", 1), ("assistant", "message", 1), ("other", "meta", 2),
        ("user", "message", 4), ("assistant", "message", 4),
    ]
    prompt, response, meta, multi, short = events
    assert prompt.text == "Write a haiku about <rust>"
    assert prompt.occurred_at.isoformat() == "2026-03-10T18:12:00+00:00"
    assert prompt.attrs["time_zone_unknown"] is True  # "CET" is read as UTC, flagged
    assert prompt.native_id.startswith("abc123:2026-03-10T18:12:00Z:")
    assert response.text == "Red flakes on old iron\n\n- line two"
    assert response.parent_id == prompt.native_id and response.author == "gemini"
    assert "<p>Red flakes" in response.raw["html"]
    assert meta.text == "Gave feedback: Good response" and "time_zone_unknown" not in meta.attrs
    assert multi.text == "multi\nline prompt"
    assert multi.occurred_at.isoformat() == "2026-03-10T18:00:00+00:00"  # GMT+01:00 applied
    assert short.text == "Short answer."
    assert len(issues) == 1 and issues[0].line == 5 and "timestamp" in issues[0].message
    assert adapter.skipped_foreign[str(path)] == 1


def test_local_time_formats():
    moment, known = parse_local_time("Mar 10, 2026, 6:12:00\u202fPM CET")
    assert moment.isoformat() == "2026-03-10T18:12:00+00:00" and not known
    moment, known = parse_local_time("10.03.2026, 18:12:00 MEZ")
    assert moment.hour == 18 and not known
    moment, known = parse_local_time("2026-03-10 18:12:00 UTC")
    assert moment.hour == 18 and known
    assert parse_local_time("line prompt") == (None, False)


def test_html_to_text():
    html = (
        "<h2>Title</h2><p>Para with <b>bold</b>\n and   <a href='x'>link</a>.</p>"
        "<ol><li>one<ul><li>sub</li></ul></li><li>two</li></ol>"
        "<pre>  code\n    indented</pre><table><tr><th>a</th><th>b</th></tr>"
        "<tr><td>1</td><td>2</td></tr></table><style>p{}</style>tail<br>line2"
    )
    assert html_to_text(html) == (
        "Title\n\nPara with bold and link.\n\n1. one\n  - sub\n2. two\n\n"
        "  code\n    indented\n\na | b\n1 | 2\n\ntail\nline2"
    )
    assert html_to_text("") == ""
    assert html_to_text("<img src='x.png' alt='chart'>") == "[image: chart]"
