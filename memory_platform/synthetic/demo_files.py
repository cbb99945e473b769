"""The fixed paths, model and file contents the demo's Claude Code sessions read, write and
edit (real-looking Python, SQL migrations, Rust).
"""

from __future__ import annotations

DEMO_BOOK = "/Users/dana/code/bookminder"
DEMO_TIDE = "/Users/dana/code/tidepool"
DEMO_MODEL = "claude-sonnet-4-5-20250929"

DEMO_MODELS_PY = '''class Highlight(Base):
    __tablename__ = "highlights"

    id: Mapped[int] = mapped_column(primary_key=True)
    book_id: Mapped[int] = mapped_column(ForeignKey("books.id"), index=True)
    text: Mapped[str]
    note: Mapped[str | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)'''

DEMO_FTS_MIGRATION = '''"""highlights full-text search (SQLite FTS5)"""

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE highlights_fts USING fts5(text, note, "
        "content='highlights', content_rowid='id')"
    )
    op.execute(
        "CREATE TRIGGER highlights_ai AFTER INSERT ON highlights BEGIN "
        "INSERT INTO highlights_fts(rowid, text, note) VALUES (new.id, new.text, new.note); END"
    )'''

DEMO_SEARCH_STUB = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    return []'''

DEMO_SEARCH_FTS = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    rows = db.execute(
        text(
            "SELECT h.* FROM highlights_fts f JOIN highlights h ON h.id = f.rowid "
            "WHERE highlights_fts MATCH :q ORDER BY rank LIMIT 50"
        ),
        {"q": q},
    )
    return [HighlightOut.model_validate(r) for r in rows]'''

DEMO_IMPORTER = '''def import_kindle_clippings(path: Path, db: Session) -> int:
    count = 0
    with db.begin():  # one transaction for the whole file
        for clip in parse_clippings(path):
            db.add(Highlight(book_id=resolve_book(db, clip), text=clip.text))
            count += 1
    return count'''

DEMO_LOCKED = """...........F
=================================== FAILURES ===================================
_________________________ test_import_while_searching __________________________
sqlite3.OperationalError: database is locked

The above exception was the direct cause of the following exception:

sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked
[SQL: INSERT INTO highlights (book_id, text, note, created_at) VALUES (?, ?, ?, ?)]
=========================== short test summary info ============================
FAILED tests/test_importer.py::test_import_while_searching - sqlalchemy.exc.OperationalError: \
(sqlite3.OperationalError) database is locked
1 failed, 11 passed in 6.02s"""

DEMO_TSV_MIGRATION = '''"""highlights: tsvector search (replaces FTS5, see ADR-004)"""

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.execute("DROP TABLE IF EXISTS highlights_fts")
    op.execute(
        "ALTER TABLE highlights ADD COLUMN search tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('english', coalesce(text, '')), 'B') || "
        "setweight(to_tsvector('english', coalesce(note, '')), 'C')) STORED"
    )
    op.create_index("ix_highlights_search", "highlights", ["search"], postgresql_using="gin")'''

DEMO_SEARCH_PG = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    query = func.websearch_to_tsquery("english", q)
    stmt = (
        select(Highlight)
        .where(Highlight.search.op("@@")(query))
        .order_by(func.ts_rank_cd(Highlight.search, query).desc())
        .limit(50)
    )
    return [HighlightOut.model_validate(h) for h in db.scalars(stmt)]'''

DEMO_CACHE_RS = """use anyhow::Result;

impl Cache {
    pub fn evict_stale(&mut self, now: DateTime<Utc>) -> usize {
        let mut evicted = 0;
        for (station, entry) in self.entries.iter() {
            if entry.expires_at < now {
                self.entries.remove(station);
                evicted += 1;
            }
        }
        evicted
    }

    pub fn load(path: &Path) -> Result<Cache> {
        let bytes = std::fs::read(path)?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}"""

DEMO_E0502 = """error[E0502]: cannot borrow `self.entries` as mutable because it is also \
borrowed as immutable
  --> src/cache.rs:88:17
   |
85 |         for (station, entry) in self.entries.iter() {
   |                                 -------------------
   |                                 |
   |                                 immutable borrow occurs here
   |                                 immutable borrow later used here
...
88 |                 self.entries.remove(station);
   |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ mutable borrow occurs here

For more information about this error, try `rustc --explain E0502`.
error: could not compile `tidepool` (lib) due to 1 previous error"""

DEMO_EVICT_OLD = """        let mut evicted = 0;
        for (station, entry) in self.entries.iter() {
            if entry.expires_at < now {
                self.entries.remove(station);
                evicted += 1;
            }
        }
        evicted"""

DEMO_EVICT_NEW = """        let before = self.entries.len();
        self.entries.retain(|_, entry| entry.expires_at >= now);
        before - self.entries.len()"""

DEMO_SYNC_OLD = """\
pub async fn fetch_predictions(client: &Client, id: u32) -> Result<Vec<Prediction>> {
    let url = format!("{}/datagetter?station={}&product=predictions", NOAA_BASE, id);
    let resp = client.get(url).send().await?;
    Ok(resp.json::<Predictions>().await?.predictions)
}"""

DEMO_SYNC_NEW = """\
pub async fn fetch_predictions(client: &Client, id: u32) -> Result<Vec<Prediction>> {
    let url = format!("{}/datagetter?station={}&product=predictions", NOAA_BASE, id);
    let mut delay = Duration::from_millis(250);
    for attempt in 1..=MAX_ATTEMPTS {
        match client.get(&url).send().await.and_then(|r| r.error_for_status()) {
            Ok(resp) => return Ok(resp.json::<Predictions>().await?.predictions),
            Err(err) if attempt < MAX_ATTEMPTS && is_retryable(&err) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(err) => return Err(err.into()),
        }
    }
    unreachable!("the last attempt returns")
}"""
