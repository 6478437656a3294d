package coordinator

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
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

// validSecret compares in constant time; a run without a key accepts nothing.
func validSecret(key []byte, jobID string, got []byte) bool {
	if len(key) == 0 || len(got) == 0 {
		return false
	}
	return hmac.Equal(got, jobSecret(key, jobID))
}
