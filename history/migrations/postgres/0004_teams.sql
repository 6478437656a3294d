-- Teams: every run and result belongs to the team that submitted it, and the queries that
-- read a suite's runs (previous run, flaky window, changed-only reuse, a skill's runs) read
-- one team's only, so a second team's runs under the same suite name never reach them. Rows
-- written before teams are the default team's: a one-team fleet's history keeps working. The
-- indexes those queries use lead with the team.
ALTER TABLE runs ADD COLUMN team TEXT NOT NULL DEFAULT 'default';
ALTER TABLE results ADD COLUMN team TEXT NOT NULL DEFAULT 'default';
DROP INDEX runs_suite_lane_created;
CREATE INDEX runs_team_suite_lane_created ON runs (team, suite, lane, created_ms);
DROP INDEX results_cell;
CREATE INDEX results_team_cell ON results (team, suite, skill, case_name, agent, model, arm);
DROP INDEX results_reuse;
CREATE INDEX results_team_reuse ON results (team, suite, cell_key, finished_ms);

-- The audit log: who did what to which object, and whether it was allowed. Ids only grow,
-- so paging by id never meets an entry twice.
CREATE TABLE audit (
	id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at_ms   BIGINT NOT NULL,
	actor   TEXT NOT NULL,
	team    TEXT NOT NULL,
	role    TEXT NOT NULL,
	action  TEXT NOT NULL,
	object  TEXT NOT NULL,
	outcome TEXT NOT NULL,
	detail  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_team_id ON audit (team, id);
CREATE INDEX audit_at ON audit (at_ms);
