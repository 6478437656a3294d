//go:build unix

package suite

import (
	"os"
	"syscall"
)

// openFlags opens case files without blocking: were a FIFO to replace a checked file, opening it
// would otherwise wait for a writer, and plan, test or submit with it.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
