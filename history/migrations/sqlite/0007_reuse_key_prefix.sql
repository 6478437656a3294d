-- The reuse lookup (Reusable) finds a suite's results by cell key. Its index held each whole
-- key (71 characters: "sha256:" and 64 hex digits), which made it, beside the primary key,
-- the widest entry every result adds, at a random place in the index (keys are digests). It
-- now holds the key's first 24 characters (68 bits of the digest: as selective for a lookup)
-- and the query compares the whole key on the rows they find. The name and the leading
-- (team, suite), which the history dashboard's filters use, stay.
DROP INDEX results_team_reuse;
CREATE INDEX results_team_reuse ON results (team, suite, substr(cell_key, 1, 24), finished_ms);
