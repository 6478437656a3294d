package history

import (
	"strings"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The reason classes of a result that did not pass. Flaky detection leaves the infrastructure
// classes (Infrastructure) out: a case is not flaky because a sandbox failed to start.
const (
	ClassSandbox       = "sandbox"
	ClassModelEndpoint = "model_endpoint"
	ClassRateLimited   = "rate_limited"
	ClassTimeout       = "timeout"
	ClassAssertion     = "assertion"
	ClassOther         = "other"
)

// Infrastructure reports whether a reason class is a failure of the fleet or of a model
// endpoint rather than a verdict on the skill.
func Infrastructure(class string) bool {
	switch class {
	case ClassSandbox, ClassModelEndpoint, ClassRateLimited:
		return true
	}
	return false
}

// classRules are tried in order on the lower-cased reason of an errored result; the first
// rule with a matching phrase decides. Rate limits come before model endpoints (a 429 is both)
// and timeouts before sandboxes (a killed sandbox after a timeout is a timeout).
var classRules = []struct {
	class   string
	phrases []string
}{
	{ClassRateLimited, []string{"rate limit", "rate-limit", "ratelimit", "too many requests", "429", "quota"}},
	{ClassTimeout, []string{"timed out", "timeout", "deadline exceeded", "did not finish within"}},
	{ClassSandbox, []string{"sandbox", "container", "docker", "runsc", "gvisor", "image", "exit 137", "memory limit", "out of memory", "oom"}},
	{ClassModelEndpoint, []string{"model", "endpoint", "judge", "gave no answer", "connection refused", "connection reset",
		"no such host", "unexpected eof", "status 5", "502", "503", "504", "500 internal", "bad gateway", "service unavailable", "api error", "agent"}},
	{ClassAssertion, []string{"assertion", "only assertions decide", "no usable verdict"}},
}

// Classify names why a result with counted verdict v and reason did not pass:
//
//   - passed and skipped: "" (nothing to classify);
//   - failed: "assertion" (only assertions fail a job);
//   - timed_out: "timeout";
//   - errored: by the first rule of classRules whose phrase occurs in the reason, in this
//     order: rate_limited (rate limit, 429, too many requests, quota), timeout (timed out,
//     deadline exceeded), sandbox (sandbox, container, docker, image, OOM, exit 137),
//     model_endpoint (model, endpoint, judge, agent, API, connection and 5xx errors),
//     assertion (a pass its assertions do not back, an unusable verdict); else "other".
func Classify(v pb.Verdict, reason string) string {
	switch v {
	case pb.Verdict_VERDICT_PASSED, pb.Verdict_VERDICT_SKIPPED:
		return ""
	case pb.Verdict_VERDICT_FAILED:
		return ClassAssertion
	case pb.Verdict_VERDICT_TIMED_OUT:
		return ClassTimeout
	}
	r := strings.ToLower(reason)
	for _, rule := range classRules {
		for _, p := range rule.phrases {
			if strings.Contains(r, p) {
				return rule.class
			}
		}
	}
	return ClassOther
}
