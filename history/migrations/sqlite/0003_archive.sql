-- What a local run keeps beyond its rows, so that runs, compare and --baseline-run work
-- without a coordinator: the run's final status (pb.RunStatus, protobuf, with its spec), its
-- report (report.Report as JSON, gzip) and, one row each in accepted order, its results
-- (pb.Result, protobuf, gzip, the trajectory and output files inline). The counts say what
-- the bounds left out: trimmed results are kept without their trajectory (or more), omitted
-- ones not at all.
CREATE TABLE run_archives (
	run_id      TEXT PRIMARY KEY,
	status      BLOB NOT NULL,
	report      BLOB NOT NULL,
	results     INTEGER NOT NULL,
	trimmed     INTEGER NOT NULL,
	omitted     INTEGER NOT NULL,
	bytes       INTEGER NOT NULL,
	archived_ms INTEGER NOT NULL
);
CREATE TABLE result_archives (
	run_id  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	job_id  TEXT NOT NULL,
	trimmed INTEGER NOT NULL,
	result  BLOB NOT NULL,
	PRIMARY KEY (run_id, seq)
);
