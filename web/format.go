package web

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/internal/text"
)

// pageNames are the templates/*.tmpl files that are pages of the viewer (each defines
// "content", which the layout frames).
var pageNames = []string{"runs", "run", "case", "skill", "compare", "login", "error"}

// funcs are the helpers templates format with.
var funcs = template.FuncMap{
	"statusClass": statusClass,
	"ms":          durationMS,
	"pct":         percent,
	"points":      points,
	"when":        when,
	"bytes":       func(n int64) string { return byteSize(n) },
	"count":       text.Count,
	"cost":        func(x float64) string { return fmt.Sprintf("%.4f", x) },
	"add":         func(a, b int) int { return a + b },
	"p":           func(x float64) string { return fmt.Sprintf("%.4g", x) },
}

// parsePages parses every page with the layout and the partials it shares with the report.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.tmpl", "templates/partials.tmpl")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(templateFS, "templates/"+name+".tmpl")
		}
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// statusClass is the CSS class of a case status or run state: only known words become
// classes.
func statusClass(s string) string {
	switch s {
	case "passed", "failed", "errored", "timed_out", "skipped", "pending", "running", "completed", "cancelled", "deadline_exceeded":
		return "s-" + s
	case "failed-run":
		return "s-failed-run"
	}
	return "s-pending"
}

// durationMS renders milliseconds for a reader.
func durationMS(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1f s", float64(ms)/1000)
	default:
		return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
	}
}

// percent renders a rate in [0, 1].
func percent(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// points renders a difference of rates in signed percentage points.
func points(x float64) string {
	if math.Abs(x) < 0.0005 {
		return "0.0"
	}
	return fmt.Sprintf("%+.1f", 100*x)
}

// when renders a time in UTC; the zero time is "–".
func when(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// stateName is a run state in lower case without its prefix.
func stateName(s fmt.Stringer) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "RUN_STATE_"))
}
