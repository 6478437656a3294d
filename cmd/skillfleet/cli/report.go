package cli

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/diag"
	"github.com/skillfleet/skillfleet/internal/text"
	"github.com/skillfleet/skillfleet/skill"
)

// report is the document `--format json` writes, and what text output is rendered from.
type report struct {
	// Valid is what the exit status says: no error anywhere, about a skill or not.
	Valid       bool             `json:"valid"`
	Skills      []skillReport    `json:"skills"`
	Diagnostics diag.Diagnostics `json:"diagnostics"` // those about no particular skill
	Errors      int              `json:"errors"`
	Warnings    int              `json:"warnings"`
}

type skillReport struct {
	Path        string           `json:"path"`
	Name        string           `json:"name"`
	Valid       bool             `json:"valid"`
	Diagnostics diag.Diagnostics `json:"diagnostics"`
}

// add files diagnostics under the skills they are about: a skill's SKILL.md, or a file in its
// directory (a cases file, an eval), under the nearest skill above it, so that a skill whose
// test cases are broken is not "valid" while the command fails. The rest go top-level.
func (r *report) add(skills []*skill.Skill, ds diag.Diagnostics) {
	byFile := make(map[string]int, len(skills))
	byDir := make(map[string]int, len(skills))
	start := len(r.Skills)
	for i, s := range skills {
		byFile[s.File] = start + i
		if s.Dir != "" {
			if abs, err := filepath.Abs(s.Dir); err == nil {
				if _, taken := byDir[abs]; !taken {
					byDir[abs] = start + i
				}
			}
		}
		r.Skills = append(r.Skills, skillReport{Path: s.Dir, Name: s.Name, Diagnostics: diag.Diagnostics{}})
	}
	owner := func(d diag.Diagnostic) (int, bool) {
		file := d.File
		if i, ok := byFile[file]; ok {
			return i, true
		}
		// Discovery findings below a skill (a sub-skill's SKILL.md that is not listed) are
		// about the tree, not about the skill above them.
		if file == "" || len(byDir) == 0 || strings.HasPrefix(d.Rule, "discovery.") || strings.EqualFold(filepath.Base(file), skill.FileName) {
			return 0, false
		}
		p, err := filepath.Abs(file)
		if err != nil {
			return 0, false
		}
		for {
			if i, ok := byDir[p]; ok {
				return i, true
			}
			up := filepath.Dir(p)
			if up == p {
				return 0, false
			}
			p = up
		}
	}
	for _, d := range ds {
		if i, ok := owner(d); ok {
			r.Skills[i].Diagnostics = append(r.Skills[i].Diagnostics, d)
		} else {
			r.Diagnostics = append(r.Diagnostics, d)
		}
	}
}

// finish sorts and counts; call it once everything is added.
func (r *report) finish() {
	if r.Skills == nil {
		r.Skills = []skillReport{}
	}
	if r.Diagnostics == nil {
		r.Diagnostics = diag.Diagnostics{}
	}
	r.Diagnostics.Sort()
	r.Errors, r.Warnings = r.Diagnostics.Errors(), r.Diagnostics.Warnings()
	for i := range r.Skills {
		sr := &r.Skills[i]
		sr.Diagnostics.Sort()
		sr.Valid = !sr.Diagnostics.HasErrors()
		r.Errors += sr.Diagnostics.Errors()
		r.Warnings += sr.Diagnostics.Warnings()
	}
	r.Valid = r.Errors == 0
}

// all returns every diagnostic, sorted.
func (r *report) all() diag.Diagnostics {
	out := append(diag.Diagnostics{}, r.Diagnostics...)
	for _, s := range r.Skills {
		out = append(out, s.Diagnostics...)
	}
	out.Sort()
	return out
}

// writeText writes one diagnostic per line, compiler style, then the summary.
func (r *report) writeText(w io.Writer, extra ...string) error {
	var b strings.Builder
	for _, d := range r.all() {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	b.WriteString(r.summary(extra...))
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// summary reads like "12 skills, 1 error, 3 warnings"; extra counts go after the skills.
func (r *report) summary(extra ...string) string {
	parts := append([]string{text.Count(len(r.Skills), "skill", "skills")}, extra...)
	parts = append(parts, text.Count(r.Errors, "error", "errors"), text.Count(r.Warnings, "warning", "warnings"))
	return strings.Join(parts, ", ")
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// exit maps a finished report to the command's result.
func (r *report) exit() error {
	if r.Errors > 0 {
		return errorsFound()
	}
	return nil
}
