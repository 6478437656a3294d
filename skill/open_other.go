//go:build !unix

package skill

import (
	"bytes"
	"io"
	"os"
)

// readRegular reads a regular file of at most limit bytes (FIFOs are a Unix concern; see
// open_unix.go).
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &notRegularError{mode: info.Mode()}
	}
	if info.Size() > limit {
		return nil, &tooLargeError{size: info.Size()}
	}
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+1))
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, &tooLargeError{size: int64(buf.Len()), atLeast: true}
	}
	return buf.Bytes(), nil
}
