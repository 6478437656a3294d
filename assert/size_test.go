package assert

import (
	"testing"
	"unsafe"
)

// TestAssertionSize pins the size of an Assertion: a plan keeps one per assertion of each of
// its cases (300,000 for the 100,000-case benchmark), so a field that pads the struct by a
// word costs megabytes there.
func TestAssertionSize(t *testing.T) {
	if got, want := unsafe.Sizeof(Assertion{}), uintptr(144); got > want {
		t.Fatalf("an Assertion takes %d bytes, more than %d", got, want)
	}
}
