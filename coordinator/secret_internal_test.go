package coordinator

import (
	"bytes"
	"testing"
)

func TestValidSecret(t *testing.T) {
	key := bytes.Repeat([]byte{1}, jobKeySize)
	other := bytes.Repeat([]byte{2}, jobKeySize)
	good := jobSecret(key, "j1")
	for _, tc := range []struct {
		name   string
		key    []byte
		job    string
		secret []byte
		want   bool
	}{
		{"the job's secret", key, "j1", good, true},
		{"no secret", key, "j1", nil, false},
		{"another job's secret", key, "j2", good, false},
		{"another run's key", other, "j1", good, false},
		{"a prefix of it", key, "j1", good[:16], false},
		{"a run without a key accepts nothing", nil, "j1", jobSecret(nil, "j1"), false},
	} {
		if got := validSecret(tc.key, tc.job, tc.secret); got != tc.want {
			t.Errorf("%s: validSecret = %v, want %v", tc.name, got, tc.want)
		}
		// The run loop's kept HMAC state answers alike, however often it is used.
		s := newJobSecrets(tc.key)
		for i := range 3 {
			if got := s.valid(tc.job, tc.secret); got != tc.want {
				t.Errorf("%s: jobSecrets.valid (use %d) = %v, want %v", tc.name, i+1, got, tc.want)
			}
			if got, want := s.of(tc.job), jobSecret(tc.key, tc.job); !bytes.Equal(got, want) {
				t.Errorf("%s: jobSecrets.of (use %d) = %x, want jobSecret's %x", tc.name, i+1, got, want)
			}
		}
	}
}

// TestRunSecretsFollowTheKey: a resumed run's key is set after the run is made, and a legacy
// run's replaced; the secrets the loop checks are always its key's.
func TestRunSecretsFollowTheKey(t *testing.T) {
	r := &run{}
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{1}, jobKeySize), bytes.Repeat([]byte{2}, jobKeySize)} {
		r.key = key
		if got, want := r.secrets().of("j1"), jobSecret(key, "j1"); !bytes.Equal(got, want) {
			t.Errorf("key %x: secret %x, want %x", key, got, want)
		}
		if got := r.secrets().valid("j1", jobSecret(key, "j1")); got != (key != nil) {
			t.Errorf("key %x: valid = %v", key, got)
		}
	}
}

// BenchmarkJobSecret is what a job costs the coordinator for its secret: one HMAC when it is
// published and one when its result is checked.
func BenchmarkJobSecret(b *testing.B) {
	key, err := newJobKey()
	if err != nil {
		b.Fatal(err)
	}
	id := "j0123456789abcdef0123"
	s := jobSecret(key, id)
	b.Run("new HMAC", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !validSecret(key, id, s) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("run's HMAC", func(b *testing.B) {
		secrets := newJobSecrets(key)
		b.ReportAllocs()
		for b.Loop() {
			if !secrets.valid(id, s) {
				b.Fatal("invalid")
			}
		}
	})
}
