package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nuid"
	"go.uber.org/zap"
)

// Claim is a worker's hold on its own directory under a root that several workers share: on
// a node whose Docker engine they all use, the bundle caches and gateway sockets must be node
// paths, and a worker that is gone for good (a deleted pod) cannot clean up after itself.
//
// The hold is an flock on DIR/.lock. The kernel drops it when the process ends, however it
// ends, so a directory whose lock nobody holds belongs to no running worker.
type Claim struct {
	// Dir is root/id.
	Dir  string
	lock *os.File
}

// ErrBadID means a worker id cannot name its directory: it must be a single path element that
// does not start with a dot.
var ErrBadID = errors.New("a worker id must be a single path element not starting with a dot")

// ClaimOptions tune ClaimDir.
type ClaimOptions struct {
	// Busy is how long a lock held by someone else is waited for before the id counts as
	// taken: another worker pruning the directory holds it for a moment. Default 2 s.
	Busy time.Duration
	// Sleep waits between two tries; nil means time.Sleep.
	Sleep func(time.Duration)
	// afterOpen, in tests, runs between opening the lock file and locking it: where a pruner
	// can take the directory for dead.
	afterOpen func()
}

const (
	lockName = ".lock"
	// gonePrefix marks a directory taken from a dead worker and being removed; one left by a
	// pruner that died midway is removed by the next.
	gonePrefix = ".gone-"
)

// ClaimDir makes root/id this worker's directory, holds it for as long as the process lives
// (or until Release), and then removes the directories under root whose workers are gone:
// those with a lock file that nobody holds. A directory without a lock file is left alone (a
// worker may be creating it, or it predates locks) and is logged. Two workers with the same
// id on the same root are refused: their caches would trample each other.
func ClaimDir(root, id string, opts ClaimOptions, log *zap.Logger) (*Claim, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("worker: %q cannot name a directory under %s: %w", id, root, ErrBadID)
	}
	if opts.Busy <= 0 {
		opts.Busy = 2 * time.Second
	}
	if opts.Sleep == nil {
		opts.Sleep = time.Sleep
	}
	if log == nil {
		log = zap.NewNop()
	}
	c, err := claim(root, id, opts)
	if err != nil {
		return nil, err
	}
	prune(root, id, log)
	return c, nil
}

// claim locks root/id/.lock and checks that the locked file is still the one at that path: a
// pruner that took the directory for dead between our open and our lock has renamed it away,
// and then we start again.
func claim(root, id string, opts ClaimOptions) (*Claim, error) {
	dir := filepath.Join(root, id)
	lockPath := filepath.Join(dir, lockName)
	waited := time.Duration(0)
	const pause = 50 * time.Millisecond
	for {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("worker: claim %s: %w", dir, err)
		}
		f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("worker: claim %s: %w", dir, err)
		}
		if opts.afterOpen != nil {
			opts.afterOpen()
		}
		locked, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("worker: claim %s: %w", dir, err)
		}
		if !locked {
			f.Close()
			if waited >= opts.Busy {
				return nil, fmt.Errorf("worker: %s is held by another running worker with id %s: give each worker on this root its own id", dir, id)
			}
			opts.Sleep(pause)
			waited += pause
			continue
		}
		if same, err := stillAt(f, lockPath); err != nil || !same {
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("worker: claim %s: %w", dir, err)
			}
			continue
		}
		return &Claim{Dir: dir, lock: f}, nil
	}
}

// Release gives the directory up without removing it, so a restart with the same id finds
// its cache warm; once released, the next worker to claim a directory under the root may
// remove it.
func (c *Claim) Release() error {
	return c.lock.Close()
}

// prune removes the directories of gone workers under root, best effort: what it cannot
// remove now, a later start tries again.
func prune(root, own string, log *zap.Logger) {
	entries, err := os.ReadDir(root)
	if err != nil {
		log.Warn("cannot list the shared directory to prune it", zap.String("root", root), zap.Error(err))
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || name == own {
			continue
		}
		path := filepath.Join(root, name)
		if strings.HasPrefix(name, gonePrefix) {
			if err := os.RemoveAll(path); err != nil {
				log.Warn("cannot remove a gone worker's directory", zap.String("dir", path), zap.Error(err))
			}
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		gone, err := takeIfGone(root, name)
		switch {
		case errors.Is(err, errNoLock):
			log.Info("directory without a lock left alone: remove it by hand if its worker is gone", zap.String("dir", path))
		case err != nil:
			log.Warn("cannot prune a worker's directory", zap.String("dir", path), zap.Error(err))
		case gone != "":
			if err := os.RemoveAll(gone); err != nil {
				log.Warn("cannot remove a gone worker's directory", zap.String("dir", gone), zap.Error(err))
				continue
			}
			log.Info("removed the directory of a gone worker", zap.String("dir", path))
		}
	}
}

// errNoLock means a directory has no lock file, so whether its worker runs is unknown.
var errNoLock = errors.New("no lock file")

// takeIfGone renames root/name out of the way when nobody holds its lock, and returns where it
// went; "" and no error when its worker is alive (or another pruner got there first).
func takeIfGone(root, name string) (string, error) {
	path := filepath.Join(root, name)
	f, err := os.Open(filepath.Join(path, lockName))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
			return "", nil // moved away by another pruner meanwhile
		}
		return "", errNoLock
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	locked, err := tryLock(f)
	if err != nil || !locked {
		return "", err
	}
	// Holding the lock, the directory is ours to move: a worker claiming it now either fails
	// its lock and waits, or finds its lock file moved and starts again.
	if same, err := stillAt(f, filepath.Join(path, lockName)); err != nil || !same {
		return "", err
	}
	gone := filepath.Join(root, gonePrefix+name+"-"+nuid.Next())
	if err := os.Rename(path, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return gone, nil
}

// tryLock takes an exclusive flock on f without waiting; false when someone else holds one.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
	}
}

// stillAt reports whether the open file f is the one at path.
func stillAt(f *os.File, path string) (bool, error) {
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(held, now), nil
}
