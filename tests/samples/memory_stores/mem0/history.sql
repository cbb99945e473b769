-- mem0's history table (mem0/memory/storage.py, SQLiteManager) as it writes it: one row
-- per ADD, UPDATE and DELETE. Build the database with sqlite3 history.db < history.sql.
CREATE TABLE IF NOT EXISTS history (
    id           TEXT PRIMARY KEY,
    memory_id    TEXT,
    old_memory   TEXT,
    new_memory   TEXT,
    event        TEXT,
    created_at   DATETIME,
    updated_at   DATETIME,
    is_deleted   INTEGER,
    actor_id     TEXT,
    role         TEXT
);
INSERT INTO history VALUES ('e1a0f8d2-5b6c-4c1e-9f0a-1b2c3d4e5f60', 'a1f5e9c0-2b4d-4e6f-8a0b-1c2d3e4f5a6b', NULL, 'Lives in Lisbon', 'ADD', '2025-05-01T08:00:00.000000+00:00', NULL, 0, NULL, 'user');
INSERT INTO history VALUES ('e1a0f8d2-5b6c-4c1e-9f0a-1b2c3d4e5f61', 'c2d4e6f8-0a1b-4c3d-9e5f-6a7b8c9d0e1f', NULL, 'Uses Neovim with the LazyVim distribution', 'ADD', '2025-05-02T09:30:00.000000+00:00', NULL, 0, NULL, 'user');
INSERT INTO history VALUES ('e1a0f8d2-5b6c-4c1e-9f0a-1b2c3d4e5f62', 'a1f5e9c0-2b4d-4e6f-8a0b-1c2d3e4f5a6b', 'Lives in Lisbon', 'Moved from Lisbon to Porto in June 2025', 'UPDATE', '2025-05-01T08:00:00.000000+00:00', '2025-06-15T19:12:00.000000+00:00', 0, NULL, 'user');
INSERT INTO history VALUES ('e1a0f8d2-5b6c-4c1e-9f0a-1b2c3d4e5f63', 'f0e1d2c3-b4a5-4968-8776-655443322110', NULL, 'Is training for the Porto half marathon', 'ADD', '2025-06-20T07:45:00.000000+00:00', NULL, 0, NULL, 'user');
INSERT INTO history VALUES ('e1a0f8d2-5b6c-4c1e-9f0a-1b2c3d4e5f64', 'f0e1d2c3-b4a5-4968-8776-655443322110', 'Is training for the Porto half marathon', NULL, 'DELETE', '2025-06-20T07:45:00.000000+00:00', '2025-09-01T10:00:00.000000+00:00', 1, NULL, 'user');
