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
	// FormPaths is a path or a list of paths; each item is one assertion (Path).
	FormPaths
	// FormFile is a mapping {path, V} or a list of them, V being the key Type.FileValueKey
	// names; each item is one assertion (Path, and Value or JSON).
	FormFile
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
	case FileExists, FileNotExists:
		return FormPaths
	case FileContains, FileMatches, FileJSON:
		return FormFile
	}
	return 0
}

// The keys of a FormFile mapping.
const (
	FilePath    = "path"
	FileText    = "text"
	FilePattern = "pattern"
	FileDoc     = "json"
)

// FileValueKey is the key of a FormFile mapping that holds what the file is compared with:
// "text" (file_contains, Value), "pattern" (file_matches, Value) or "json" (file_json, JSON);
// "" for other types.
func (t Type) FileValueKey() string {
	switch t {
	case FileContains:
		return FileText
	case FileMatches:
		return FilePattern
	case FileJSON:
		return FileDoc
	}
	return ""
}

// PromptTypes lists the kinds a prompt case may use, in the order of Types. Their names are
// the keys of a prompt case's assertions mapping.
func PromptTypes() []Type {
	return []Type{OutputContains, OutputNotContains, OutputMatches, SemanticMatch,
		SkillActivated, SkillNotActivated, ToolCalled, ToolNotCalled, ToolOrder,
		MaxTurns, MaxToolCalls, MaxTokens,
		FileExists, FileNotExists, FileContains, FileMatches, FileJSON}
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
