-- Each result's command-agent CLI version (pb.Result.agent_version: "claude-cli/2.1.240"), so
-- that what changed between two runs can say the agent did. Empty for the built-in agent, a CLI
-- that named none, and the results stored before it.
ALTER TABLE results ADD COLUMN agent_version TEXT NOT NULL DEFAULT '';
