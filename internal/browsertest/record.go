package browsertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/audits"
	"github.com/chromedp/cdproto/debugger"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"

	"github.com/skillfleet/skillfleet/internal/text"
)

// Bounds on what a page can make the recorder keep: the pages under test show suite output,
// which is hostile and can log without end.
const (
	maxRecords    = 1000 // per list: dialogs, messages, CSP violations, scripts
	maxRecordText = 2000
)

// Dialog is a JavaScript dialog a page opened (alert, confirm, prompt, beforeunload). Pages
// under test never open one, so any dialog is a script that ran.
type Dialog struct {
	Type    string // "alert", "confirm", "prompt" or "beforeunload"
	Message string
	URL     string // the frame that opened it
}

// Message is one line of what the page's console would show: a console API call, an uncaught
// exception, or an entry of the browser's own log (a failed load, a security error).
type Message struct {
	// Source is "console" for a console API call, "exception" for an uncaught exception, or
	// the browser log's source ("network", "security", "javascript", ...).
	Source string
	Level  string // the console method or the log level: "log", "error", "warning", ...
	Text   string
	URL    string
}

// String renders the message as one line.
func (m Message) String() string {
	return fmt.Sprintf("[%s %s] %s (%s)", m.Source, m.Level, m.Text, m.URL)
}

// CSPViolation is something a Content-Security-Policy blocked, as the browser reports it: an
// inline script, an event handler attribute, a load from a source the policy does not allow.
type CSPViolation struct {
	Directive  string // the effective directive, e.g. "script-src-elem", "script-src-attr", "img-src"
	Kind       string // the browser's violation type, e.g. "kInlineViolation", "kURLViolation"
	BlockedURL string // the resource blocked, empty for inline code
	URL        string // the document, or the script, that held the violating code
	Line       int64  // 0-based, -1 when unknown
	ReportOnly bool   // the policy only reported it, and the code ran
}

// String renders the violation as one line.
func (v CSPViolation) String() string {
	s := v.Directive + " " + v.Kind
	if v.BlockedURL != "" {
		s += " " + v.BlockedURL
	}
	if v.ReportOnly {
		s += " (report only: not blocked)"
	}
	return s + " at " + v.URL
}

// Script is code the page compiled from its document or from a file: a <script> element or
// an event handler attribute (URL is its document's), or a script file (URL is the file's).
// Code without a URL is left out: it is what the tests evaluate through the driver, and code
// a page script passed to eval, whose caller is recorded already.
type Script struct {
	URL    string
	Length int64  // in characters
	Hash   string // SHA-256 of the source, as the browser reports it
}

// recorder keeps the events of one tab that tell whether a script ran. Its listen method runs
// in chromedp's read loop for the tab: it must return at once and send no command.
type recorder struct {
	dismiss func() // answers the open dialog; runs on its own goroutine

	mu          sync.Mutex
	dialogs     []Dialog
	dialogsSeen int
	messages    []Message
	csp         []CSPViolation
	scripts     []Script
	scriptsSeen int
	pending     sync.WaitGroup // dismissals under way
}

// listen records the events it knows and ignores the others.
func (r *recorder) listen(ev any) {
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		r.mu.Lock()
		r.dialogsSeen++ // counted even when the list is full: a payload may log 1000 lines first
		r.mu.Unlock()
		keep(r, &r.dialogs, Dialog{Type: string(ev.Type), Message: clip(ev.Message), URL: clip(ev.URL)})
		// An open dialog blocks the page's scripts, and so every later action; dismiss it
		// (confirm answers false, prompt null) from outside the read loop.
		r.pending.Add(1)
		go func() {
			defer r.pending.Done()
			r.dismiss()
		}()
	case *runtime.EventConsoleAPICalled:
		keep(r, &r.messages, Message{Source: "console", Level: string(ev.Type), Text: clip(consoleText(ev.Args)), URL: clip(stackURL(ev.StackTrace))})
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		if d == nil {
			return
		}
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		keep(r, &r.messages, Message{Source: "exception", Level: "error", Text: clip(text), URL: clip(d.URL)})
	case *log.EventEntryAdded:
		if e := ev.Entry; e != nil {
			keep(r, &r.messages, Message{Source: string(e.Source), Level: string(e.Level), Text: clip(e.Text), URL: clip(e.URL)})
		}
	case *debugger.EventScriptParsed:
		if ev.URL != "" {
			r.mu.Lock()
			r.scriptsSeen++ // counted even when the list is full
			r.mu.Unlock()
			keep(r, &r.scripts, Script{URL: clip(ev.URL), Length: ev.Length, Hash: ev.Hash})
		}
	case *audits.EventIssueAdded:
		if ev.Issue == nil || ev.Issue.Details == nil || ev.Issue.Details.ContentSecurityPolicyIssueDetails == nil {
			return
		}
		d := ev.Issue.Details.ContentSecurityPolicyIssueDetails
		v := CSPViolation{
			Directive:  clip(d.ViolatedDirective),
			Kind:       string(d.ContentSecurityPolicyViolationType),
			BlockedURL: clip(d.BlockedURL),
			Line:       -1,
			ReportOnly: d.IsReportOnly,
		}
		if loc := d.SourceCodeLocation; loc != nil {
			v.URL, v.Line = clip(loc.URL), loc.LineNumber
		}
		keep(r, &r.csp, v)
	}
}

// keep appends v to the list unless it is full.
func keep[T any](r *recorder, list *[]T, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(*list) < maxRecords {
		*list = append(*list, v)
	}
}

// record is a copy of what a recorder holds.
type record struct {
	dialogs                  []Dialog
	messages                 []Message
	csp                      []CSPViolation
	scripts                  []Script
	dialogsSeen, scriptsSeen int
}

// snapshot returns a copy of what was recorded.
func (r *recorder) snapshot() record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return record{
		dialogs: slices.Clone(r.dialogs), messages: slices.Clone(r.messages),
		csp: slices.Clone(r.csp), scripts: slices.Clone(r.scripts),
		dialogsSeen: r.dialogsSeen, scriptsSeen: r.scriptsSeen,
	}
}

// consoleText renders a console call's arguments the way a console shows them, roughly:
// strings as they are, other values by their JSON or description.
func consoleText(args []*runtime.RemoteObject) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		if a == nil {
			continue
		}
		switch {
		case a.Type == runtime.RemoteObjectTypeString && len(a.Value) > 0:
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				parts = append(parts, s)
				continue
			}
			parts = append(parts, string(a.Value))
		case len(a.Value) > 0:
			parts = append(parts, string(a.Value))
		case a.UnserializableValue != "":
			parts = append(parts, string(a.UnserializableValue))
		case a.Description != "":
			parts = append(parts, a.Description)
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// stackURL is the script a console call came from, when the browser says.
func stackURL(st *runtime.StackTrace) string {
	if st == nil || len(st.CallFrames) == 0 || st.CallFrames[0] == nil {
		return ""
	}
	return st.CallFrames[0].URL
}

// clip bounds a string from the page.
func clip(s string) string { return text.ClipBytes(s, maxRecordText) }
