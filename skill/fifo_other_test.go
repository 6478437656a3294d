//go:build !unix

package skill

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a Unix feature") }
