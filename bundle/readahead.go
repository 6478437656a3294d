package bundle

import (
	"bytes"
	"crypto/sha256"
	"runtime"
	"sync"
)

// aheadLimits bound reading ahead of the writer. A skill's files are read ahead while each is
// at most file bytes and together at most skill bytes; the rest are streamed by the writer as
// they always were. At most skillsPerWorker skills per goroutine are prepared and not yet
// written, so what is held is a few megabytes at worst, whatever the suite.
type aheadLimits struct {
	file, skill     int64
	skillsPerWorker int
}

// The limits WriteBundle reads ahead within.
const (
	aheadFileBytes       = 256 << 10
	aheadSkillBytes      = 1 << 20
	aheadSkillsPerWorker = 4
)

// readAhead prepares the skills of a bundle for its writer in a few goroutines: it lists each
// skill's files (stat calls) and reads and hashes the small ones (read calls and sha256), none
// of which depends on the tar stream, which the writer alone must write in order. Planning a
// suite of 1,000 skills spent most of its hashing time in this, on one core.
type readAhead struct {
	skills []preparedSkill
	// next hands out skill indices in order; tokens bounds how far ahead of the writer the
	// preparers run (a preparer takes a token before an index, the writer returns it after the
	// skill); done stops the preparers when the writer returns early.
	next   chan int
	tokens chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

// preparedSkill is one skill's files as listed, and those read ahead.
type preparedSkill struct {
	files   []bundleFile
	skipped []SkippedFile
	err     error
	// ahead[i] is files[i] read ahead; files past len(ahead) are the writer's to stream.
	ahead []aheadFile
	ready chan struct{}
}

// aheadFile is a file read ahead: its content and sha256, or why it could not be read (the
// writer reports that when it reaches the file, as it would have reading it itself).
type aheadFile struct {
	data []byte
	sum  [sha256.Size]byte
	err  error
}

// startReadAhead starts preparing the skills dirs, in their order, within lim.
func startReadAhead(dirs []Dir, lim aheadLimits) *readAhead {
	workers := min(runtime.GOMAXPROCS(0), len(dirs))
	ra := &readAhead{
		skills: make([]preparedSkill, len(dirs)),
		next:   make(chan int, len(dirs)),
		tokens: make(chan struct{}, max(lim.skillsPerWorker*workers, 1)),
		done:   make(chan struct{}),
	}
	for i := range dirs {
		ra.skills[i].ready = make(chan struct{})
		ra.next <- i
	}
	close(ra.next)
	for range cap(ra.tokens) {
		ra.tokens <- struct{}{}
	}
	for range workers {
		ra.wg.Add(1)
		go func() {
			defer ra.wg.Done()
			for {
				select {
				case <-ra.tokens:
				case <-ra.done:
					return
				}
				i, ok := <-ra.next
				if !ok {
					return
				}
				ra.skills[i].prepare(dirs[i].Path, lim)
				close(ra.skills[i].ready)
			}
		}()
	}
	return ra
}

// skill waits for skill i to be prepared.
func (ra *readAhead) skill(i int) *preparedSkill {
	<-ra.skills[i].ready
	return &ra.skills[i]
}

// written lets the preparers run one skill further: the writer is done with skill i, whose
// memory is dropped.
func (ra *readAhead) written(i int) {
	ra.skills[i].ahead = nil
	ra.tokens <- struct{}{}
}

// stop ends the preparers and waits for them.
func (ra *readAhead) stop() {
	close(ra.done)
	ra.wg.Wait()
}

// prepare lists the skill directory dir and reads its first small files.
func (s *preparedSkill) prepare(dir string, lim aheadLimits) {
	s.files, s.skipped, s.err = skillFiles(dir)
	if s.err != nil {
		return
	}
	var total int64
	for _, f := range s.files {
		if f.size > lim.file || total+f.size > lim.skill {
			return
		}
		total += f.size
		var a aheadFile
		// Room for the size and the read that finds the end, so the buffer never grows.
		buf := bytes.NewBuffer(make([]byte, 0, f.size+bytes.MinRead))
		if a.err = copyFile(buf, f.path, f.size, nil); a.err == nil {
			a.data = buf.Bytes()
			a.sum = sha256.Sum256(a.data)
		}
		s.ahead = append(s.ahead, a)
		if a.err != nil {
			return
		}
	}
}
