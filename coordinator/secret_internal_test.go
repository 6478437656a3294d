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
	b.ReportAllocs()
	for b.Loop() {
		if !validSecret(key, id, s) {
			b.Fatal("invalid")
		}
	}
}
