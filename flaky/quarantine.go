package flaky

// Policy says which cells are quarantined: they still run and are reported, marked, but their
// failures do not set the exit code.
type Policy struct {
	// Flaky quarantines every cell labelled Flaky.
	Flaky bool
	// Cells are quarantined whatever their label. A listed cell's empty Suite, Skill, Agent or
	// Model matches any value, so {Skill: "pdf", Case: "fills-form"} quarantines that case
	// for every agent and model; Case must be given.
	Cells []Cell
}

// Quarantine answers, cell by cell, whether a failure sets the exit code. Build it with
// NewQuarantine; the zero value quarantines nothing.
type Quarantine struct {
	flaky bool
	// listed holds the explicit cells as given, wildcards as empty fields: a lookup tries
	// each combination of a cell's fields and the empty string.
	listed map[Cell]bool
}

// NewQuarantine prepares a policy for many lookups. Listed cells without a Case are ignored:
// quarantining every case of a skill or suite at once is too broad to be a slip of the pen.
func NewQuarantine(p Policy) Quarantine {
	q := Quarantine{flaky: p.Flaky}
	for _, c := range p.Cells {
		if c.Case == "" {
			continue
		}
		if q.listed == nil {
			q.listed = make(map[Cell]bool, len(p.Cells))
		}
		q.listed[c] = true
	}
	return q
}

// Decision is whether a cell is quarantined, and why, for the report to mark it.
type Decision struct {
	Quarantined bool
	// Reason is "listed" or "flaky" when quarantined, empty otherwise.
	Reason string
}

// SetsExitCode reports whether a failure of the cell sets the run's exit code.
func (d Decision) SetsExitCode() bool { return !d.Quarantined }

// Decide is the quarantine decision for a cell with its current label. A listed cell is
// quarantined whatever its label, so the reason names the list first.
func (q Quarantine) Decide(c Cell, l Label) Decision {
	if q.isListed(c) {
		return Decision{Quarantined: true, Reason: "listed"}
	}
	if q.flaky && l == Flaky {
		return Decision{Quarantined: true, Reason: "flaky"}
	}
	return Decision{}
}

// SetsExitCode reports whether a failure of cell c, labelled l, sets the run's exit code.
func (q Quarantine) SetsExitCode(c Cell, l Label) bool { return q.Decide(c, l).SetsExitCode() }

func (q Quarantine) isListed(c Cell) bool {
	if len(q.listed) == 0 {
		return false
	}
	// Each of the four wildcard fields is either the cell's value or empty: 16 lookups at
	// most, whatever the length of the list.
	for mask := range 16 {
		k := Cell{Case: c.Case}
		if mask&1 != 0 {
			k.Suite = c.Suite
		}
		if mask&2 != 0 {
			k.Skill = c.Skill
		}
		if mask&4 != 0 {
			k.Agent = c.Agent
		}
		if mask&8 != 0 {
			k.Model = c.Model
		}
		if q.listed[k] {
			return true
		}
	}
	return false
}
