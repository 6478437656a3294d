// Package e2e holds the tests that run skillfleet as a user deploys it: the coordinator,
// worker and CLI binaries built from cmd/ and started as separate processes, against a
// nats-server process with TLS and authentication, with jobs in real Docker sandboxes. The
// other packages test the same code in one process; these tests check the daemons' flags,
// signals, exit codes and endpoints. Most need Docker and the sandbox image (`skillfleet
// sandbox build`); those of a fleet shared by teams run the fleet simulator's workers instead
// (`skillfleet-bench fleet`), which need neither.
package e2e
