// Package sandbox runs one job's commands in a hardened, throw-away Docker container.
//
// A job gets a fresh container (cold, or pre-started from a warm pool) that idles under
// Docker's init with `sleep infinity`; the job's commands (agent tool calls, command cases) run
// in it with exec as the unprivileged user 10001, their output captured into capped buffers.
// The container is never reused: Release kills and removes it, and a reaper removes labelled
// strays left by crashes. Every container gets the same containment (see hardening.go): no
// network, no capabilities, no-new-privileges, seccomp, read-only root with small tmpfs work
// dirs, memory/CPU/pids/file-size/open-file limits, a wall-clock kill from outside.
//
// The image is built by EnsureImage (image.go) from deploy/sandbox.
package sandbox
