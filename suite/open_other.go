//go:build !unix

package suite

import "os"

// openFlags opens case files (FIFOs that block an open are a Unix concern; see open_unix.go).
const openFlags = os.O_RDONLY
