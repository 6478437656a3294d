package coordinator

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/skillfleet/skillfleet/internal/text"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// A job's result secret is derived, not stored: HMAC-SHA256(run key, job id). One 32-byte
// key per run is all that must survive a restart (it is kept with the run's status), the
// secret of any job can be recomputed to check a result, and without the key the secret of a
// job one has not received cannot be guessed.

const jobKeySize = 32

func newJobKey() ([]byte, error) {
	k := make([]byte, jobKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("job key: %w", err)
	}
	return k, nil
}

func jobSecret(key []byte, jobID string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(jobID))
	return m.Sum(nil)
}

// jobSecrets derives and checks the secrets of one run key's jobs, as jobSecret and
// validSecret do, with the key's HMAC state made once: a run loop derives a secret for every
// job it publishes and checks one for every result, and a new HMAC for each cost as much as
// the MAC itself and six allocations.
type jobSecrets struct {
	key []byte
	mu  sync.Mutex
	mac hash.Hash
	sum [sha256.Size]byte
}

func newJobSecrets(key []byte) *jobSecrets {
	return &jobSecrets{key: key, mac: hmac.New(sha256.New, key)}
}

// of is jobSecret(s.key, jobID).
func (s *jobSecrets) of(jobID string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.macLocked(jobID, nil)
}

// valid is validSecret(s.key, jobID, got).
func (s *jobSecrets) valid(jobID string, got []byte) bool {
	if len(s.key) == 0 || len(got) == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return hmac.Equal(got, s.macLocked(jobID, s.sum[:0]))
}

func (s *jobSecrets) macLocked(jobID string, into []byte) []byte {
	s.mac.Reset()
	io.WriteString(s.mac, jobID)
	return s.mac.Sum(into)
}

// reuseProof proves that the coordinator offered job jobID the reuse of source's verdict
// under digest: HMAC-SHA256(run key, "reuse" NUL job NUL source NUL digest). The prefix keeps
// it apart from job secrets, whose message is a bare job id.
func reuseProof(key []byte, jobID, source, digest string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("reuse\x00" + jobID + "\x00" + source + "\x00" + digest))
	return m.Sum(nil)
}

// validReuse checks a reused result's proof in constant time.
func validReuse(key []byte, jobID, source, digest string, got []byte) bool {
	if len(key) == 0 || len(got) == 0 {
		return false
	}
	return hmac.Equal(got, reuseProof(key, jobID, source, digest))
}

// demoteUnprovenReuse turns a reused result without a valid proof into an errored one and
// reports whether it did: the job's real result is that one, and it did not run. The report
// and every page that shows a run's results apply it alike.
func demoteUnprovenReuse(key []byte, res *pb.Result) bool {
	if res.GetVerdict() != pb.Verdict_VERDICT_REUSED ||
		validReuse(key, res.GetJobId(), res.GetReusedFrom(), res.GetCellDigest(), res.GetReuseProof()) {
		return false
	}
	res.Verdict = pb.Verdict_VERDICT_ERRORED
	res.Reason = "the worker reported a reuse of run " + text.ClipBytes(res.GetReusedFrom(), 128) + " this coordinator did not offer the job"
	return true
}

// validSecret compares in constant time; a run without a key accepts nothing.
func validSecret(key []byte, jobID string, got []byte) bool {
	if len(key) == 0 || len(got) == 0 {
		return false
	}
	return hmac.Equal(got, jobSecret(key, jobID))
}
