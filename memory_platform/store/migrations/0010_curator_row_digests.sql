-- The curator's listing, row by row (issue 20, defect 7): a digest per listed memory, in
-- handle order beside memory_ids, so a run refused because the namespace changed can name
-- the memory that changed. The fingerprint alone says only that something did, and the
-- edit time cannot tell: an edit made while the model was still judging happened before
-- the run was recorded. NULL for runs recorded before this column.

ALTER TABLE curator_runs ADD COLUMN row_digests text[];
ALTER TABLE curator_runs ADD CONSTRAINT curator_runs_row_digests_listed
    CHECK (row_digests IS NULL OR cardinality(row_digests) = listed);
