//go:build unix

package skill

import (
	"io/fs"
	"syscall"
)

// readRegular reads a regular file of at most limit bytes. It opens with O_NONBLOCK, because
// opening a FIFO for reading otherwise waits for a writer (a FIFO named SKILL.md must cost a
// diagnostic, not a hang), and uses raw system calls, because an os.File opened non-blocking
// is registered with the network poller, one more failing system call per file.
func readRegular(path string, limit int64) ([]byte, error) {
	fd, err := openNoBlock(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, &notRegularError{mode: unixMode(uint32(st.Mode))}
	}
	if st.Size > limit {
		return nil, &tooLargeError{size: st.Size}
	}
	// One byte more than the stated size notices a file that grew since fstat.
	buf := make([]byte, 0, st.Size+1)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return nil, &tooLargeError{size: int64(len(buf)), atLeast: true}
}

func openNoBlock(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func fstat(fd int, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstat(fd, st); err != syscall.EINTR {
			return err
		}
	}
}

func read(fd int, p []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

func unixMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	}
	return fs.ModeIrregular
}
