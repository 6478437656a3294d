package judge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skillfleet/skillfleet/agent"
	"github.com/skillfleet/skillfleet/assert"
	"github.com/skillfleet/skillfleet/internal/text"
)

// MaxVotes bounds the samples of one evaluation, whatever a suite asks for.
const MaxVotes = 9

// Config configures the judge.
type Config struct {
	// Model is the judge model; empty means the client's endpoint model. Keep it separate from
	// the agent's model. A model with another price belongs on its own agent.Endpoint.
	Model string
	// Votes is the default number of samples (default 1); odd numbers avoid ties.
	Votes int
}

// Deps are a judge's collaborators.
type Deps struct {
	// Client is the judge model's client; required.
	Client *agent.Client
	// Cache keeps decided verdicts; nil means no caching.
	Cache Cache
	// Log may be nil (no logging).
	Log *zap.Logger
	// Registry gets the judge's metrics; nil keeps them private.
	Registry prometheus.Registerer
}

// Judge decides semantic_match assertions. It is safe for concurrent use.
type Judge struct {
	model string
	votes int
	c     *agent.Client
	cache Cache
	log   *zap.Logger
	m     *metrics
}

// New makes a judge on a model client.
func New(cfg Config, deps Deps) (*Judge, error) {
	if deps.Client == nil {
		return nil, errors.New("judge: a model client is required")
	}
	if cfg.Model == "" {
		cfg.Model = deps.Client.Model()
	}
	if cfg.Votes <= 0 {
		cfg.Votes = 1
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	m, err := newMetrics(deps.Registry)
	if err != nil {
		return nil, err
	}
	return &Judge{model: cfg.Model, votes: min(cfg.Votes, MaxVotes), c: deps.Client, cache: deps.Cache, log: deps.Log, m: m}, nil
}

// sampleError is a sample that gave no verdict.
type sampleError struct {
	schema bool // the judge answered, outside the schema; else it did not answer
	msg    string
}

func (e *sampleError) Error() string { return e.msg }

// Evaluate judges whether output meets criterion (input is what the agent was asked). votes ≤ 0
// means the configured number. With N votes it samples until a strict majority of N agrees
// (so a clear verdict costs fewer than N requests), and that majority decides; samples that
// fail count against it, so when no strict majority of N agrees the result is errored. A
// decided verdict is cached and reused.
//
// The Result is always usable: errored when the judge failed or answered outside the schema,
// never passed by default. The error is non-nil only when ctx ended (the Result is then errored
// too); Usage is what the samples cost.
func (j *Judge) Evaluate(ctx context.Context, criterion, input, output string, votes int) (assert.Result, agent.Usage, error) {
	return j.EvaluateWithReference(ctx, criterion, input, "", output, votes)
}

// EvaluateWithReference is Evaluate with a reference: what a good answer looks like (an eval's
// expected_output), shown to the judge beside the criterion under ReferencePromptVersion's
// prompt. An empty reference is Evaluate: the same request, the same cache key.
func (j *Judge) EvaluateWithReference(ctx context.Context, criterion, input, reference, output string, votes int) (assert.Result, agent.Usage, error) {
	if votes <= 0 {
		votes = j.votes
	}
	votes = min(votes, MaxVotes)
	res := assert.Result{Type: assert.SemanticMatch, Expected: text.ClipEscaped(criterion, maxExcerpt)}
	tag := fmt.Sprintf("model %s, %s", j.model, promptVersion(reference))
	if strings.TrimSpace(criterion) == "" {
		res.Errored = true
		res.Message = "semantic_match has no criterion; the judge was not asked"
		return res, agent.Usage{}, nil
	}
	key := cacheKey(j.model, votes, criterion, input, reference, output)
	if j.cache != nil {
		if v, ok := j.cache.Get(key); ok {
			j.m.evaluations.WithLabelValues(verdictWord(v.Passed), "cache").Inc()
			return j.decided(res, v, tag+", cached verdict"), agent.Usage{}, nil
		}
	}

	var usage agent.Usage
	var passed, failed []Verdict
	var errs []*sampleError
	need := votes/2 + 1
	for range votes {
		v, u, err := j.sample(ctx, criterion, input, reference, output, votes)
		usage.Add(u)
		if err != nil {
			if ctx.Err() != nil {
				res.Errored = true
				res.Message = fmt.Sprintf("judge interrupted (%s): %v", tag, ctx.Err())
				return res, usage, ctx.Err()
			}
			var se *sampleError
			if !errors.As(err, &se) {
				se = &sampleError{msg: err.Error()}
			}
			errs = append(errs, se)
			if se.schema {
				j.m.samples.WithLabelValues("off_schema").Inc()
			} else {
				j.m.samples.WithLabelValues("no_answer").Inc()
			}
		} else if v.Passed {
			passed = append(passed, v)
			j.m.samples.WithLabelValues("passed").Inc()
		} else {
			failed = append(failed, v)
			j.m.samples.WithLabelValues("failed").Inc()
		}
		if len(passed) >= need || len(failed) >= need {
			break
		}
		// Stop early when a strict majority is out of reach.
		if left := votes - len(passed) - len(failed) - len(errs); len(passed)+left < need && len(failed)+left < need {
			break
		}
	}
	if votes > 1 {
		tag += fmt.Sprintf(", %d votes: %d passed, %d failed, %d errored", votes, len(passed), len(failed), len(errs))
		if n := len(passed) + len(failed) + len(errs); n > max(len(passed), len(failed), len(errs)) {
			j.m.split.Inc()
		}
	}
	var v Verdict
	switch {
	case len(passed) >= need:
		v = passed[0]
	case len(failed) >= need:
		v = failed[0]
	default:
		res.Errored = true
		switch {
		case votes == 1 && errs[0].schema:
			res.Message = fmt.Sprintf("judge answered outside the schema: %s (%s)", errs[0].msg, tag)
		case votes == 1:
			res.Message = fmt.Sprintf("judge could not answer: %s (%s)", errs[0].msg, tag)
		case len(errs) > 0:
			res.Message = fmt.Sprintf("judge reached no strict majority (%s); first error: %s", tag, errs[0].msg)
		default:
			res.Message = fmt.Sprintf("judge reached no strict majority (%s)", tag)
		}
		j.log.Debug("judge errored", zap.String("model", j.model), zap.String("reason", res.Message))
		j.m.evaluations.WithLabelValues("errored", "model").Inc()
		return res, usage, nil
	}
	if j.cache != nil {
		j.cache.Put(key, v)
	}
	j.m.evaluations.WithLabelValues(verdictWord(v.Passed), "model").Inc()
	return j.decided(res, v, tag), usage, nil
}

func verdictWord(passed bool) string {
	if passed {
		return "passed"
	}
	return "failed"
}

func (j *Judge) decided(res assert.Result, v Verdict, tag string) assert.Result {
	res.Passed = v.Passed
	res.Actual = text.ClipEscaped(v.Evidence, maxExcerpt)
	res.Message = fmt.Sprintf("judge (%s): %s — %s", tag, verdictWord(v.Passed), res.Actual)
	return res
}

// sample asks the judge once.
func (j *Judge) sample(ctx context.Context, criterion, input, reference, output string, votes int) (Verdict, agent.Usage, error) {
	temp := 0.0
	if votes > 1 {
		temp = VoteTemperature
	}
	ans, u, err := j.c.Converse(ctx, agent.Conversation{
		Model:       j.model,
		System:      systemPrompt(reference),
		Messages:    []agent.Message{{Role: agent.RoleUser, Text: userMessage(criterion, input, reference, output)}},
		Temperature: &temp,
		Schema:      &agent.Schema{Name: VerdictSchemaName, Description: "The judge's verdict on the criterion.", Schema: verdictSchema()},
	})
	if err != nil {
		return Verdict{}, u, &sampleError{msg: err.Error()}
	}
	if ans.Stop == agent.StopRefusal || ans.Stop == agent.StopSafety {
		return Verdict{}, u, &sampleError{schema: true, msg: "refused: " + text.ClipEscaped(cmp.Or(ans.Text, ans.StopDetail), 120)}
	}
	v, err := parseVerdict(ans.Text)
	if err != nil {
		why := err.Error()
		if ans.Stop != agent.StopEnd && ans.StopDetail != "" {
			why += " (finish reason " + ans.StopDetail + ")"
		}
		return Verdict{}, u, &sampleError{schema: true, msg: why + "; answer: " + text.ClipEscaped(ans.Text, 80)}
	}
	return v, u, nil
}
