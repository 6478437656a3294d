package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Names of the JetStream assets, shared by every coordinator and worker of a deployment.
// They are part of the wire contract: renaming one strands the data under the old name.
const (
	// JobsStream holds queued jobs; WorkQueue retention, so an acked job is gone.
	JobsStream = "SKILLFLEET_JOBS"
	// ResultsStream holds every attempt's result until ResultsMaxAge.
	ResultsStream = "SKILLFLEET_RESULTS"
	// ExhaustedStream keeps the server's MAX_DELIVERIES advisories of the jobs stream, so that
	// a job exhausted while no coordinator listens is still recorded when one starts.
	ExhaustedStream = "SKILLFLEET_EXHAUSTED"
	// ExhaustedConsumer is the coordinators' durable consumer of ExhaustedStream.
	ExhaustedConsumer = "coordinator"
	// RunsBucket is the KV bucket of run state, keyed by run id.
	RunsBucket = "skillfleet_runs"
	// RatesBucket is the KV bucket of the rate budgets the fleet shares, keyed by endpoint
	// budget (RateStore).
	RatesBucket = "skillfleet_rates"
	// BundlesBucket is the object store of suite bundles, keyed by content digest.
	BundlesBucket = "skillfleet_bundles"

	// JobsSubjectPrefix is the first two tokens of every job subject.
	JobsSubjectPrefix = "skillfleet.jobs"
	// ResultsSubjectPrefix is the first two tokens of every result subject.
	ResultsSubjectPrefix = "skillfleet.results"

	// OnDemandConsumer is the durable pull consumer of the on-demand lane.
	OnDemandConsumer = "workers-ondemand"
	// ScheduledConsumer is the durable pull consumer of the scheduled lane.
	ScheduledConsumer = "workers-scheduled"

	// DigestPrefix starts every bundle digest; the rest is 64 lowercase hex digits.
	DigestPrefix = "sha256:"
)

// Lane is the priority lane of a job: the third token of its subject.
type Lane string

// The two lanes. Workers drain on-demand jobs before scheduled ones.
const (
	LaneOnDemand  Lane = "ondemand"
	LaneScheduled Lane = "scheduled"
)

// Lanes lists the lanes in priority order, highest first.
func Lanes() []Lane { return []Lane{LaneOnDemand, LaneScheduled} }

// Valid reports whether l is one of the two lanes.
func (l Lane) Valid() bool { return l == LaneOnDemand || l == LaneScheduled }

// consumer returns the durable name serving l.
func (l Lane) consumer() string {
	if l == LaneScheduled {
		return ScheduledConsumer
	}
	return OnDemandConsumer
}

// filter is the subject filter of l's consumer. It ends in ">" rather than "*" so that a later,
// additive change may put more tokens after the run id without touching the consumers.
func (l Lane) filter() string { return JobsSubjectPrefix + "." + string(l) + ".>" }

// JobSubject is the subject a job of run is published on. It does not validate: see ValidateRunID.
func JobSubject(lane Lane, run string) string {
	return JobsSubjectPrefix + "." + string(lane) + "." + run
}

// ResultSubject is the subject a worker older than result keys publishes the results of run
// on; CaseResultSubject is the one of a case.
func ResultSubject(run string) string { return ResultsSubjectPrefix + "." + run }

// CaseResultSubject is the subject the results of run's case with the result key key are
// published on (pb.Job.result_key); an empty key is ResultSubject's. A case's results are read
// from its subject alone, so a case page costs the case, not the run.
func CaseResultSubject(run, key string) string {
	if key == "" {
		return ResultSubject(run)
	}
	return ResultsSubjectPrefix + "." + run + "." + key
}

// ParseResultSubject splits a result subject into its run and result key ("" for a subject
// without one).
func ParseResultSubject(subject string) (run, key string, ok bool) {
	rest, found := strings.CutPrefix(subject, ResultsSubjectPrefix+".")
	if !found {
		return "", "", false
	}
	run, key, keyed := strings.Cut(rest, ".")
	if ValidateRunID(run) != nil || (keyed && ValidateResultKey(key) != nil) {
		return "", "", false
	}
	return run, key, true
}

// ValidateResultKey reports whether key can be a result subject's last token: 1 to 128 of
// [A-Za-z0-9_-].
func ValidateResultKey(key string) error {
	if !validID(key) {
		return fmt.Errorf("queue: invalid result key %q: want 1-128 characters of [A-Za-z0-9_-]", key)
	}
	return nil
}

// JobMsgID is the deduplication id (Nats-Msg-Id) of a job message. It includes the run because
// job ids are stable across runs (suite.JobID hashes skill, case, kind, epoch and agent): with the
// bare job id, the same suite submitted twice within the duplicates window would silently lose
// every job of the second run.
func JobMsgID(run, job string) string { return run + "." + job }

// ResultMsgID is the deduplication id of a result: one per run, job, attempt and content. The
// attempt is in it because a WorkQueue stream keeps a job's id deduplicated after the ack, and
// the run for the same reason as in JobMsgID. The content's digest is in it so that a result
// published first by someone else (a forgery, which the coordinator refuses for lack of the
// job's secret) cannot make the server drop the real one as its duplicate; a resend of the
// same result, the case deduplication is for, has the same bytes.
func ResultMsgID(run, job string, attempt int, data []byte) string {
	sum := sha256.Sum256(data)
	return run + "." + job + "." + strconv.Itoa(attempt) + "." + hex.EncodeToString(sum[:12])
}

// validID reports whether s is 1 to 128 of [A-Za-z0-9_-]: the intersection of what a subject
// token and a KV key accept, minus '.', '=' and '/' which would read as separators, and safe
// inside message ids and headers. A loop, not a regexp: it runs for every job and result.
func validID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// digestRe matches a bundle digest.
var digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidateRunID reports whether run can be a subject token and a KV key: 1 to 128 of
// [A-Za-z0-9_-]. Coordinators should mint run ids that pass (a ULID or UUID does).
func ValidateRunID(run string) error {
	if !validID(run) {
		return fmt.Errorf("queue: invalid run id %q: want 1-128 characters of [A-Za-z0-9_-]", run)
	}
	return nil
}

// ValidateJobID reports whether job can be part of a message id: 1 to 128 of [A-Za-z0-9_-].
func ValidateJobID(job string) error {
	if !validID(job) {
		return fmt.Errorf("queue: invalid job id %q: want 1-128 characters of [A-Za-z0-9_-]", job)
	}
	return nil
}

// ValidateDigest reports whether digest is "sha256:" followed by 64 lowercase hex digits.
func ValidateDigest(digest string) error {
	if !digestRe.MatchString(digest) {
		return fmt.Errorf("queue: invalid bundle digest %q: want sha256:<64 lowercase hex digits>", digest)
	}
	return nil
}

// bundleObjectName maps a digest to its object name. The mapping is the identity: the object
// store base64-encodes names into its subjects, so ':' is allowed (checked by a test). Every
// access goes through here so that a change of mind stays in one place.
func bundleObjectName(digest string) string { return digest }
