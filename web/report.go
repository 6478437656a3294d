package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/comparison"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/report"
)

// DefaultReportBytes bounds an HTML report: a 10,000-case run stays under 20 MB.
const DefaultReportBytes = 19 << 20

// The HTML report's detail budget: a failing case gets at most reportFailingBytes of text (its
// outputs, assertions, transcript), a passing one at most reportPassingBytes, and any one piece
// at most reportPieceBytes; the file's own bound comes first.
const (
	reportFailingBytes = 1 << 20
	reportPassingBytes = 16 << 10
	reportPieceBytes   = 64 << 10
	// reportMinFailing and reportMinPassing are the least text a case with a detail block
	// keeps.
	reportMinFailing = 4 << 10
	reportMinPassing = 512
	// reportCaseBase is the markup of one case's detail block without its text.
	reportCaseBase = 1200
	// reportRowBase is the markup of one row of the cases table without its text.
	reportRowBase = 400
	// reportReasonBytes bounds a reason in the cases table, and reportNameBytes a name in it
	// (escaped): 10,000 rows of hostile names and reasons must leave room for detail.
	reportReasonBytes = 240
	reportNameBytes   = 120
	// reportRowsShare is the part of the file the cases table may take; a run too large for
	// it lists its failing cases first and counts the rest.
	reportRowsShare = 0.75
	// reportTail is kept for what follows the details.
	reportTail = 4 << 10
)

// ReportInput is what an HTML report is made of.
type ReportInput struct {
	// Status is the run's status; nil: the report says only the run's id.
	Status *pb.RunStatus
	Report report.Report
	// Results replays the results the report counts, with their documents inline (the
	// trajectory as ATIF JSON, the output files); nil: each case shows only the report's
	// evidence.
	Results func(fn func(*pb.Result) error) error
	// Comparison is the run's arms compared (or the run against another); nil: none.
	Comparison *comparison.Report
	// Generated stamps the report; the zero time leaves the stamp out.
	Generated time.Time
	// MaxBytes bounds the file (0 = DefaultReportBytes).
	MaxBytes int
}

// reportDoc is the HTML report's data.
type reportDoc struct {
	CSP       string
	CSS       template.CSS
	Run       runHead
	Generated time.Time
	Summary   summaryView
	Changes   *changesView
	Compare   *compareView
	Rows      []caseRow
	Failing   int
	Details   []caseDetail
	// Undetailed counts the cases without a detail block, Unlisted those left out of the
	// table (the last passing ones of a run too large for the file); ClipNote says how detail
	// is bounded.
	Undetailed, Unlisted int
	ClipNote             string
}

// reportTemplate is parsed once per WriteReport: it is cheap next to a report.
func reportTemplate() (*template.Template, error) {
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/report.tmpl", "templates/partials.tmpl")
	if err != nil {
		return nil, fmt.Errorf("web: report template: %w", err)
	}
	return t, nil
}

// reportCSS is the report's inline stylesheet and the CSP that allows it, by its hash, and
// nothing else: the file runs no script and fetches nothing.
func reportCSS() (template.CSS, string, error) {
	b, err := fs.ReadFile(assetFS, "assets/style.css")
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	csp := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; img-src data:; base-uri 'none'; form-action 'none'"
	return template.CSS(b), csp, nil
}

// WriteReport writes a run as one self-contained HTML file: its summary, what changed, the
// comparison of its arms, every case's verdict, and the detail of as many cases as fit —
// failing cases first — each with every epoch's assertions and evidence, outputs and
// trajectory. Long texts are clipped (and marked), so that the file stays under MaxBytes.
func WriteReport(w io.Writer, in ReportInput) error {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = DefaultReportBytes
	}
	t, err := reportTemplate()
	if err != nil {
		return err
	}
	css, csp, err := reportCSS()
	if err != nil {
		return fmt.Errorf("web: report stylesheet: %w", err)
	}
	rep := &in.Report
	st := in.Status
	if st == nil {
		st = &pb.RunStatus{Id: rep.Run}
	}
	doc := reportDoc{CSP: csp, CSS: css, Run: headOf(st).noted(st, rep), Generated: in.Generated, Summary: summaryOf(rep)}
	doc.Run.Href = ""
	if doc.Run.ID == "" {
		doc.Run.ID = rep.Run
	}

	// The cases, failing first, and the rows of the table; a case's anchor is its index in
	// the report.
	var order []int
	for i := range rep.Cases {
		if rep.Cases[i].Status != report.StatusPassed {
			order = append(order, i)
		}
	}
	doc.Failing = len(order)
	for i := range rep.Cases {
		if rep.Cases[i].Status == report.StatusPassed {
			order = append(order, i)
		}
	}
	anchor := func(i int) string { return "#c" + strconv.Itoa(i) }
	fixed := 0
	for k, i := range order {
		c := &rep.Cases[i]
		row := rowOf(c, i, "")
		row.Skill, row.Case, row.Agent = clipName(c.Skill, reportNameBytes), clipName(c.Case, reportNameBytes), clipName(c.Agent, reportNameBytes)
		row.Href = anchor(i)
		row.Reason = clipName(oneLine(c.Reason, reportReasonBytes), reportReasonBytes)
		cost := reportRowBase + 2*(EscapedLen(row.Skill)+EscapedLen(row.Case)+EscapedLen(row.Agent)) + EscapedLen(row.Reason)
		if fixed+cost > int(float64(limit)*reportRowsShare) {
			doc.Unlisted = len(order) - k
			order = order[:k]
			break
		}
		fixed += cost
		doc.Rows = append(doc.Rows, row)
	}
	link := linksBy(rep.Cases, anchor)
	if doc.Changes = changesOf(rep.Changes, link); doc.Changes != nil {
		doc.Changes.PreviousHref = "" // not in this file
	}
	if in.Comparison != nil {
		doc.Compare = compareViewOf(in.Comparison, links{cases: link})
	}

	// What the fixed parts take, measured: the rest is the details' budget.
	var head bytes.Buffer
	if err := t.ExecuteTemplate(&head, "head", doc); err != nil {
		return fmt.Errorf("web: report: %w", err)
	}
	pool := limit - head.Len() - fixed - reportTail

	// A detail block for as many failing cases as nine tenths of the pool hold (all of it when
	// every case failed), each with at least reportMinFailing of text, the rest shared out
	// among them; then the same for passing cases in what is left.
	var failing, passing []int
	for _, i := range order {
		if rep.Cases[i].Status == report.StatusPassed {
			passing = append(passing, i)
		} else {
			failing = append(failing, i)
		}
	}
	failPool := pool
	if len(passing) > 0 {
		failPool = pool * 9 / 10
	}
	failing, failShare := share(rep.Cases, failing, failPool, reportMinFailing, reportFailingBytes)
	pool -= usedBy(rep.Cases, failing, failShare)
	passing, passShare := share(rep.Cases, passing, pool, reportMinPassing, reportPassingBytes)
	budgets := make(map[int]*budget, len(failing)+len(passing))
	// One output must not take a case's whole share: its stderr, files and transcript get
	// their part.
	piece := func(share int) int { return min(reportPieceBytes, max(share/3, 2<<10)) }
	for _, i := range failing {
		budgets[i] = newBudget(failShare, piece(failShare))
	}
	for _, i := range passing {
		budgets[i] = newBudget(passShare, piece(passShare))
	}
	doc.Undetailed = len(rep.Cases) - len(budgets)
	for k := range doc.Rows {
		if budgets[doc.Rows[k].Index] == nil {
			doc.Rows[k].Href = "" // no detail to link to
		}
	}

	details := make(map[int]*caseDetail, len(budgets))
	for _, i := range append(append([]int(nil), failing...), passing...) {
		d := detailOf(&rep.Cases[i], budgets[i])
		d.Anchor = "c" + strconv.Itoa(i)
		details[i] = &d
	}
	if in.Results != nil && len(details) > 0 {
		index := make(map[caseKey]int, len(rep.Cases))
		for i := range details {
			c := &rep.Cases[i]
			index[caseKey{c.Skill, c.Case, c.Agent, armName(c.Arm)}] = i
		}
		err := in.Results(func(res *pb.Result) error {
			i, ok := index[caseKey{res.GetSkill(), res.GetCaseName(), res.GetAgent(), armName(res.GetArm())}]
			if !ok {
				return nil
			}
			d := details[i]
			d.Results = append(d.Results, epochOf(res, budgets[i], ""))
			return nil
		})
		if err != nil {
			return fmt.Errorf("web: report: reading the results: %w", err)
		}
	}
	clipped := false
	for _, i := range order {
		d := details[i]
		if d == nil {
			continue
		}
		sortEpochs(d.Results)
		if len(d.Results) == 0 && in.Results != nil {
			d.NoResults = "No result of this case was accepted."
		}
		if budgets[i].spent {
			d.Clipped, clipped = true, true
			d.ClipNote = "Clipped: this report keeps a bounded part of each case's outputs and transcripts."
		}
		doc.Details = append(doc.Details, *d)
	}
	if clipped || doc.Undetailed > 0 || doc.Unlisted > 0 {
		doc.ClipNote = fmt.Sprintf("This file is kept under %s: it shows at most %s of detail per failing case and %s per passing case, failing cases first (sizes as escaped in this file)",
			byteSize(int64(limit)), byteSize(int64(failShare)), byteSize(int64(passShare)))
		if doc.Undetailed > 0 {
			doc.ClipNote += fmt.Sprintf("; %d cases have no detail here", doc.Undetailed)
		}
		if doc.Unlisted > 0 {
			doc.ClipNote += fmt.Sprintf("; %d cases are not listed at all (passing ones went first)", doc.Unlisted)
		}
		doc.ClipNote += ". The JSON report and `skillfleet runs export` hold everything."
	}
	if _, err := w.Write(head.Bytes()); err != nil {
		return err
	}
	if err := t.ExecuteTemplate(w, "body", doc); err != nil {
		return fmt.Errorf("web: report: %w", err)
	}
	return nil
}

// caseBase is the markup of a case's detail block without its text.
func caseBase(c *report.Case) int {
	return reportCaseBase + 3*(EscapedLen(name(c.Skill))+EscapedLen(name(c.Case))+EscapedLen(name(c.Agent))) + EscapedLen(name(c.File))
}

// share picks, in order, the cases whose detail block and at least least bytes of text fit in
// pool, and shares the rest of the pool among them, at most most each.
func share(cases []report.Case, order []int, pool, least, most int) ([]int, int) {
	var kept []int
	for _, i := range order {
		need := caseBase(&cases[i]) + least
		if pool < need {
			break
		}
		pool -= need
		kept = append(kept, i)
	}
	if len(kept) == 0 {
		return nil, 0
	}
	return kept, min(most, least+pool/len(kept))
}

// usedBy is what the detail of the cases takes of a pool, at most each bytes of text each.
func usedBy(cases []report.Case, kept []int, each int) int {
	n := 0
	for _, i := range kept {
		n += caseBase(&cases[i]) + each
	}
	return n
}

// caseKey identifies a case of a report.
type caseKey struct{ skill, name, agent, arm string }

// reportFile serves a run's self-contained HTML report (WriteReport) for download: as an
// attachment, since its inline stylesheet is allowed by its own policy, not by the viewer's.
// A run with a baseline gets its arms compared, as `runs report --format html` does.
func (s *Server) reportFile(w http.ResponseWriter, r *http.Request, v *visitor) {
	ctx, id := r.Context(), r.PathValue("id")
	st, rep, ok := s.runAndReport(w, r, v, id)
	if !ok {
		return
	}
	in := ReportInput{Status: st, Report: rep, Generated: s.cfg.Now(), Results: func(fn func(*pb.Result) error) error {
		return s.src.AcceptedResults(ctx, id, func(res *pb.Result) error {
			s.src.ResolveDocuments(ctx, res)
			return fn(res)
		})
	}}
	if st.GetSpec().GetBaseline() != "" {
		if a, b, opt, err := s.armSides(ctx, st); err == nil {
			// A refused comparison leaves the section out; the report is still whole.
			if cmp, err := comparison.Compare(a, b, opt); err == nil {
				in.Comparison = cmp
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, in); err != nil {
		s.fail(w, r, v, lookupCode(err), err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="skillfleet-report.html"`)
	_, _ = w.Write(buf.Bytes())
}
