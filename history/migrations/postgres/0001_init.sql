-- One row per run and one per job result. Times are Unix milliseconds (UTC) so that both
-- backends store and compare them the same way.
CREATE TABLE runs (
	run_id      TEXT PRIMARY KEY,
	suite       TEXT NOT NULL,
	lane        TEXT NOT NULL,
	state       TEXT NOT NULL,
	reason      TEXT NOT NULL DEFAULT '',
	created_ms  BIGINT NOT NULL,
	finished_ms BIGINT,
	total_jobs  BIGINT NOT NULL DEFAULT 0,
	done_jobs   BIGINT NOT NULL DEFAULT 0,
	cases_total     BIGINT NOT NULL DEFAULT 0,
	cases_passed    BIGINT NOT NULL DEFAULT 0,
	cases_failed    BIGINT NOT NULL DEFAULT 0,
	cases_errored   BIGINT NOT NULL DEFAULT 0,
	cases_timed_out BIGINT NOT NULL DEFAULT 0,
	cases_skipped   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX runs_suite_lane_created ON runs (suite, lane, created_ms);
CREATE INDEX runs_created ON runs (created_ms);

CREATE TABLE results (
	run_id            TEXT NOT NULL,
	job_id            TEXT NOT NULL,
	suite             TEXT NOT NULL,
	lane              TEXT NOT NULL,
	skill             TEXT NOT NULL,
	case_name         TEXT NOT NULL,
	agent             TEXT NOT NULL,
	model             TEXT NOT NULL,
	judge_model       TEXT NOT NULL,
	arm               TEXT NOT NULL,
	epoch             INTEGER NOT NULL,
	attempt           INTEGER NOT NULL,
	verdict           TEXT NOT NULL,
	reason_class      TEXT NOT NULL,
	reason            TEXT NOT NULL,
	prompt_tokens     BIGINT NOT NULL,
	completion_tokens BIGINT NOT NULL,
	cost              DOUBLE PRECISION NOT NULL,
	duration_ms       BIGINT NOT NULL,
	case_digest       TEXT NOT NULL,
	finished_ms       BIGINT NOT NULL,
	recorded_ms       BIGINT NOT NULL,
	PRIMARY KEY (run_id, job_id)
);
CREATE INDEX results_cell ON results (suite, skill, case_name, agent, model, arm);
CREATE INDEX results_finished ON results (finished_ms);
