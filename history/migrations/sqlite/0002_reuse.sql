-- Changed-only runs: each result's cell key (what the coordinator knows defines the cell) and
-- cell digest (the key with the worker's agent configuration), the run a reused verdict came
-- from, and each run's count of reused cases. The index serves the reuse lookup: a suite's
-- passing results of given cell keys since a time.
ALTER TABLE results ADD COLUMN cell_key TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN cell_digest TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN reused_from TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cases_reused INTEGER NOT NULL DEFAULT 0;
CREATE INDEX results_reuse ON results (suite, cell_key, finished_ms);
