// Package fleet is skillfleet's composition root: the one place that wires the parts into
// running things. It builds the coordinator daemon and the worker daemon from their configs
// (the mains only turn flags into those configs), the sandbox runner, the agents and judge a
// worker serves, and a whole fleet in one process for `skillfleet test`, the end-to-end tests
// and the benchmarks. The rules by which a daemon refuses its configuration are plain
// functions here, tested without starting anything.
package fleet
