-- No query of skillfleet reads results by (team, suite, skill, case, ...): every query of a
-- suite's results reaches them through its runs (by run_id, the primary key's prefix), and the
-- history dashboard's filters on (team, suite) have results_team_reuse's leading columns. Kept
-- up to date on every insert, this index took three quarters of the database's work of
-- writing a run's results.
DROP INDEX results_team_cell;
