// Package agents holds the Dockerfiles of the agent images (Claude Code, Codex, Gemini CLI,
// opencode), each derived from the sandbox image, and the tests that keep them pinned, offline
// and unprivileged. It has no code of its own: the images are built with docker, not from Go.
package agents
