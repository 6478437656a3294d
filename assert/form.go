package assert

// Form is how a case file writes the value of an assertion kind. The suite reader decodes each
// form once, so a new kind written in an existing form is a change to this package only.
type Form int

// The forms.
const (
	// FormText is a string or a list of strings; each item is one assertion (Value).
	FormText Form = iota + 1
	// FormCriterion is semantic_match's mapping {criterion, votes}.
	FormCriterion
	// FormCount is a non-negative integer (Max).
	FormCount
	// FormNames is a list of strings, all of them one assertion (Names).
	FormNames
	// FormCalls is FormText whose list items may also be mappings of CallKeys: each item is
	// one assertion (Value, ArgsMatch, Min, Max).
	FormCalls
	// FormExitCode is an integer (ExitCode).
	FormExitCode
	// FormJSON is a YAML or JSON document (JSON).
	FormJSON
)

// Form says how a case file writes t's value; 0 for an unknown type.
func (t Type) Form() Form {
	switch t {
	case OutputContains, OutputNotContains, OutputMatches, StdoutContains, StderrContains, NotContains,
		SkillActivated, SkillNotActivated, ToolNotCalled:
		return FormText
	case SemanticMatch:
		return FormCriterion
	case MaxTurns, MaxToolCalls, MaxTokens:
		return FormCount
	case ToolOrder:
		return FormNames
	case ToolCalled:
		return FormCalls
	case ExitCode:
		return FormExitCode
	case StdoutJSON:
		return FormJSON
	}
	return 0
}

// PromptTypes lists the kinds a prompt case may use, in the order of Types. Their names are
// the keys of a prompt case's assertions mapping.
func PromptTypes() []Type {
	return []Type{OutputContains, OutputNotContains, OutputMatches, SemanticMatch,
		SkillActivated, SkillNotActivated, ToolCalled, ToolNotCalled, ToolOrder,
		MaxTurns, MaxToolCalls, MaxTokens}
}

// The keys of a tool_called mapping item.
const (
	CallName      = "name"
	CallArgsMatch = "args_match"
	CallMin       = "min"
	CallMax       = "max"
)

// CallKeys lists the keys a FormCalls mapping item may have.
func CallKeys() []string { return []string{CallName, CallArgsMatch, CallMin, CallMax} }

// New is an assertion of type t with the defaults a case file gets for what it leaves out:
// tool_called wants at least one call.
func New(t Type) Assertion {
	a := Assertion{Type: t}
	if t == ToolCalled {
		a.Min = 1
	}
	return a
}
