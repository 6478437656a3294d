// Package archtest holds the tests that keep the architecture true: the dependency rules of
// docs/architecture.md (no broker type outside queue, a worker that reads no SKILL.md, shipped
// binaries without test helpers or the browser driver) and the document's table of package
// edges, compared with what `go list` reports. It has no code of its own.
package archtest
