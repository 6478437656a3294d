package skill

// A StrictDifference is a frontmatter shape on which Validate with Options.Strict and the
// reference validator, skills-ref, give different verdicts. The list is what `validate --help`
// and the README print, so that --strict never claims to be what it is not.
type StrictDifference struct {
	// Shape is the frontmatter written, as a reader would search for it.
	Shape string
	// SkillsRef is skills-ref's verdict and why (read from its source: it parses with
	// strictyaml, which reads every scalar as a string and refuses flow style and tags).
	SkillsRef string
	// Strict is the verdict of --strict and why.
	Strict string
}

// StrictDifferences lists every known disagreement with skills-ref, each pinned by a test.
// Where they disagree, --strict follows the specification's text.
func StrictDifferences() []StrictDifference {
	return []StrictDifference{
		{"allowed-tools as a YAML list", "accepts (joins the items with spaces)",
			"rejects (allowed-tools.type): the specification defines a space-separated string"},
		{"a metadata value that is not a string (a number, a list, a mapping)", "accepts (converts it to text)",
			"rejects (metadata.valueType): the specification defines metadata as a map of strings to strings"},
		{"a number, true or false as name, description, license or compatibility", "accepts (every scalar is text to strictyaml)",
			"rejects (*.type) and says how to quote it"},
		{"YAML flow style ({...} or [...])", "rejects (strictyaml refuses flow style)",
			"accepts: it is YAML"},
		{"YAML tags (!!str)", "rejects (strictyaml refuses tags)",
			"accepts: it is YAML"},
		{"a block scalar (| or >) whose last line ends with a newline", "counts that newline in the length limits",
			"does not count it: 1,024 characters of description are accepted with their newline"},
		{"a UTF-8 byte order mark before the first ---", "rejects (the file does not start with ---)",
			"accepts: the mark is not content"},
	}
}
