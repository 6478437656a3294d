package web

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/atif"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// Markup charged to a budget per element: rough upper bounds of the tags around each piece,
// so that a budget bounds bytes on the page and not only the text.
const (
	costEpoch     = 1500
	costAssertion = 300
	costFile      = 250
	costStep      = 250
	costCall      = 150
)

// epochView is one job of a case (an epoch against an agent): its verdict, evidence, outputs,
// trajectory and timings, clipped to a budget.
type epochView struct {
	Epoch                     int32
	Verdict, Kind             string
	Reason                    Clip
	Attempt                   int32
	Worker, Model, JudgeModel string
	// AgentVersion is the command agent's CLI version, as the CLI named itself.
	AgentVersion                    string
	JudgePrompt                     string
	Finished                        time.Time
	Timings                         *pb.Timings
	Usage                           *pb.Usage
	Assertions                      []assertionView
	AssertionsMore                  int
	Output, Stdout, Stderr          Clip
	ExitCode                        int32
	OutputTruncated                 bool
	Files                           []fileView
	FilesMore                       int
	FilesOmitted                    []string
	Conversation                    *conversation
	ToolCalls                       []callView
	Activations                     []string
	Stop                            string
	Turns                           int32
	TrajectoryNote, TrajectoryHref  string
	TrajectorySize                  int64
	Dropped                         bool
	HasOutput, HasStdout, HasStderr bool
}

// assertionView is one assertion's result with its evidence.
type assertionView struct {
	Type                      string
	Passed, Errored           bool
	Expected, Actual, Message Clip
	Path                      string
	// Judge: a semantic_match, whose Actual is the judge's reasoning.
	Judge bool
}

// fileView is one output file the agent left.
type fileView struct {
	Path      string
	Size      int64
	Truncated bool
	// Binary: not UTF-8 text; its bytes are not shown.
	Binary  bool
	Content Clip
}

// conversation is a trajectory (ATIF) as a reader follows it.
type conversation struct {
	Agent, Version, Model string
	Steps                 []stepView
	StepsMore             int
	Final                 *atif.FinalMetrics
	Notes                 Clip
}

// stepView is one message: system prompt, user input, or an agent turn with its tool calls
// and what they returned.
type stepView struct {
	ID      int
	Source  string
	Model   string
	Message Clip
	Calls   []callView
	Results []resultView
	Metrics *atif.Metrics
	// Turn is the agent turn's number (the 1-based model call); Activated the skills whose
	// SKILL.md body first entered the model's context at that call.
	Turn      int
	Activated []string
}

// callView is one tool call.
type callView struct {
	ID, Name string
	Args     Clip
	// Output, ExitCode and Error are a transcript's (used when there is no trajectory).
	Output   Clip
	ExitCode int32
	Error    string
	HasOut   bool
}

// resultView is one tool call's output as the model saw it.
type resultView struct {
	CallID  string
	Content Clip
}

// epochOf builds an epoch's view from a result whose documents are resolved, taking what it
// shows from b. trajectoryHref, when set, is where the full trajectory downloads.
func epochOf(res *pb.Result, b *budget, trajectoryHref string) epochView {
	e := epochView{
		Epoch: res.GetEpoch(), Verdict: report.StatusOf(res.GetVerdict()), Kind: report.KindName(res.GetKind()),
		Attempt: res.GetAttempt(), Worker: res.GetWorkerId(), Model: res.GetModel(), JudgeModel: res.GetJudgeModel(), AgentVersion: res.GetAgentVersion(),
		JudgePrompt: res.GetJudgePrompt(), Timings: res.GetTimings(), Usage: res.GetUsage(), ExitCode: res.GetExitCode(),
		OutputTruncated: res.GetOutputTruncated(), Stop: res.GetTranscript().GetStop(), Turns: res.GetTranscript().GetTurns(),
	}
	if res.GetFinishedAt() != nil {
		e.Finished = res.GetFinishedAt().AsTime()
	}
	if !b.charge(costEpoch) {
		e.Dropped = true
		return e
	}
	e.Reason = b.take(res.GetReason())
	for i, a := range res.GetAssertions() {
		if !b.charge(costAssertion) {
			e.AssertionsMore = len(res.GetAssertions()) - i
			break
		}
		e.Assertions = append(e.Assertions, assertionView{
			Type: a.GetType(), Passed: a.GetPassed(), Errored: a.GetErrored(), Path: b.takeShort(a.GetPath(), 1<<10).Text,
			Expected: b.take(a.GetExpected()), Actual: b.take(a.GetActual()), Message: b.take(a.GetMessage()),
			Judge: a.GetType() == "semantic_match",
		})
	}
	e.HasOutput, e.HasStdout, e.HasStderr = res.GetOutput() != "", res.GetStdout() != "", res.GetStderr() != ""
	e.Output, e.Stdout, e.Stderr = b.take(res.GetOutput()), b.take(res.GetStdout()), b.take(res.GetStderr())
	for _, a := range res.GetTranscript().GetActivations() {
		e.Activations = append(e.Activations, a.GetSkill())
	}
	if len(e.Activations) == 0 {
		e.Activations = res.GetTranscript().GetActivatedSkills()
	}
	for i, f := range res.GetOutputs() {
		if !b.charge(costFile) {
			e.FilesMore = len(res.GetOutputs()) - i
			break
		}
		fv := fileView{Path: b.takeShort(f.GetPath(), 1<<10).Text, Size: f.GetSize(), Truncated: f.GetTruncated()}
		if utf8.Valid(f.GetContent()) && !bytes.ContainsRune(f.GetContent(), 0) {
			fv.Content = b.take(string(f.GetContent()))
		} else {
			fv.Binary = true
		}
		e.Files = append(e.Files, fv)
	}
	for _, o := range res.GetOutputsOmitted() {
		e.FilesOmitted = append(e.FilesOmitted, b.takeShort(o, 1<<10).Text)
	}
	d := res.GetTrajectory()
	e.TrajectoryNote = d.GetNote()
	if len(d.GetData()) > 0 && d.GetEncoding() == "json" {
		e.TrajectorySize = int64(len(d.GetData()))
		e.TrajectoryHref = trajectoryHref
		var t atif.Trajectory
		if err := json.Unmarshal(d.GetData(), &t); err != nil {
			e.TrajectoryNote = strings.TrimSpace(e.TrajectoryNote + " the trajectory is not valid ATIF JSON: " + err.Error())
		} else {
			e.Conversation = conversationOf(&t, res.GetTranscript(), b)
		}
	}
	if e.Conversation == nil {
		// No trajectory (a command case, an older worker): the transcript's tool calls.
		for _, c := range res.GetTranscript().GetToolCalls() {
			if !b.charge(costCall) {
				break
			}
			e.ToolCalls = append(e.ToolCalls, callView{
				Name: b.takeShort(c.GetName(), 256).Text, Args: b.take(prettyJSON(c.GetArguments(), b.perPiece)),
				Output: b.take(c.GetOutput()), ExitCode: c.GetExitCode(), Error: b.takeShort(c.GetError(), 4<<10).Text, HasOut: true,
			})
		}
	}
	return e
}

// conversationOf turns a trajectory into steps, marking on each agent turn the skills it
// activated (the transcript's activations name the model call by number).
func conversationOf(t *atif.Trajectory, tr *pb.Transcript, b *budget) *conversation {
	c := &conversation{Agent: b.takeShort(t.Agent.Name, 256).Text, Version: b.takeShort(t.Agent.Version, 256).Text,
		Model: b.takeShort(t.Agent.ModelName, 256).Text, Final: t.FinalMetrics, Notes: b.take(t.Notes)}
	activated := map[int][]string{}
	for _, a := range tr.GetActivations() {
		activated[int(a.GetTurn())] = append(activated[int(a.GetTurn())], a.GetSkill())
	}
	turn := 0
	for i, s := range t.Steps {
		if s.Source == atif.SourceAgent {
			turn++
		}
		if !b.charge(costStep) {
			c.StepsMore = len(t.Steps) - i
			break
		}
		sv := stepView{ID: s.StepID, Source: s.Source, Model: b.takeShort(s.ModelName, 256).Text, Message: b.take(s.Message), Metrics: s.Metrics}
		if s.Source == atif.SourceAgent {
			sv.Turn = turn
			sv.Activated = activated[turn]
		}
		for _, call := range s.ToolCalls {
			if !b.charge(costCall) {
				break
			}
			sv.Calls = append(sv.Calls, callView{ID: b.takeShort(call.ToolCallID, 256).Text, Name: b.takeShort(call.FunctionName, 256).Text,
				Args: b.take(prettyJSON(string(call.Arguments), b.perPiece))})
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if !b.charge(costCall) {
					break
				}
				sv.Results = append(sv.Results, resultView{CallID: b.takeShort(r.SourceCallID, 256).Text, Content: b.take(r.Content)})
			}
		}
		c.Steps = append(c.Steps, sv)
	}
	return c
}

// prettyJSON indents a JSON document for reading; anything else (or a document too long to be
// worth indenting before it is clipped) comes back as it is.
func prettyJSON(s string, limit int) string {
	if len(s) > 2*limit || !json.Valid([]byte(s)) {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return buf.String()
}

// sortEpochs orders a case's results by epoch.
func sortEpochs(es []epochView) {
	slices.SortStableFunc(es, func(a, b epochView) int { return int(a.Epoch - b.Epoch) })
}
