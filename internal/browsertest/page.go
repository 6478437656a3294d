package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/audits"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/debugger"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Page is one tab of a Browser, bound to the test that opened it: every method fails that test
// (t.Fatal) when the browser does not answer within its time limit, and the tab closes when
// that test ends.
type Page struct {
	t   testing.TB
	b   *Browser
	ctx context.Context
	rec *recorder
}

// Open opens url (a loopback http:// URL or a file:// URL) in a new tab for the test t, and
// returns once it has loaded, whatever its HTTP status; it fails the test when nothing loads.
// Dialogs, console messages, CSP violations and scripts are recorded from the page's first
// byte. t is a parameter, not the browser's test, so that subtests can share one browser.
func (b *Browser) Open(t testing.TB, url string) *Page {
	t.Helper()
	p := &Page{t: t, b: b, rec: &recorder{}}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithListener(p.rec.listen))
	p.ctx = ctx
	p.rec.dismiss = func() {
		dctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, _ = chromedp.Call(dctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	}
	t.Cleanup(func() {
		cancel()
		p.rec.pending.Wait()
	})
	// Like the browser's start, the tab's first call binds the tab to its context, so it is
	// bounded from outside.
	if err := bounded(callTimeout, func() error { return chromedp.Do(ctx) }); err != nil {
		t.Fatalf("browsertest: opening a tab: %v", err)
	}
	// The Audits domain is where the browser reports CSP violations with their directive, and
	// the Debugger domain reports every script compiled; its pauses are all skipped, so a
	// payload's "debugger;" cannot stop the page.
	p.do("enabling audits and script reports", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, audits.Enable, cdp.Empty{}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, tg, debugger.Enable, debugger.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, debugger.SetSkipAllPauses, debugger.SetSkipAllPausesParams{Skip: true})
		return err
	}))
	p.do("Open("+url+")", chromedp.Navigate(url))
	return p
}

// do runs actions under the call time limit and fails the test with what when they fail.
func (p *Page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

// run is do for an action with a result.
func run[T any](p *Page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.fail(what, err)
	}
	return v
}

// fail ends the test with the failed step, and the dialogs seen so far: an unexpected dialog
// is the usual reason a page stops answering.
func (p *Page) fail(what string, err error) {
	p.t.Helper()
	msg := fmt.Sprintf("browsertest: %s: %v", what, err)
	if r := p.rec.snapshot(); r.dialogsSeen > 0 {
		msg += fmt.Sprintf(" (the page opened %d dialog(s): %v)", r.dialogsSeen, r.dialogs)
	}
	p.t.Fatal(msg)
}

// jsString renders s as a JavaScript string literal; JSON's escaping is a subset of
// JavaScript's, and Go's encoder also escapes <, > and &, so it is safe anywhere in a script.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

// URL returns the address of the page now shown, after any navigation.
func (p *Page) URL() string {
	p.t.Helper()
	return run(p, "URL()", chromedp.Location())
}

// HTML returns the document as the browser holds it now (its DOM serialized), which differs
// from the bytes served: the parser has normalized them and scripts may have changed them.
func (p *Page) HTML() string {
	p.t.Helper()
	return run(p, "HTML()", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
}

// Text returns the rendered text (innerText) of the first element matching the CSS selector,
// waiting for one to exist.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	return run(p, fmt.Sprintf("Text(%q)", selector), chromedp.Text(chromedp.CSS(selector)))
}

// Count returns how many elements match the CSS selector now, without waiting: the way to
// check that something is absent (no injected <script>, no <img> from a payload).
func (p *Page) Count(selector string) int {
	p.t.Helper()
	return run(p, fmt.Sprintf("Count(%q)", selector), chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(selector)+`).length`))
}

// Click clicks the first element matching the CSS selector, waiting for it to be visible. It
// does not wait for a page the click may load: follow links with ClickLink and send forms with
// Submit.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.do(fmt.Sprintf("Click(%q)", selector), chromedp.Click(chromedp.CSS(selector)))
}

// linkJS finds the one rendered <a> whose text, whitespace collapsed, is the argument,
// scrolls it into view and returns its centre, and what element is on top there; or how many
// links matched when not exactly one. It returns null while none matches, so that Poll waits
// for the link to appear.
const linkJS = `(want) => {
	const norm = (s) => s.replace(/\s+/g, ' ').trim();
	const hits = Array.from(document.querySelectorAll('a'))
		.filter((a) => a.getClientRects().length > 0 && norm(a.innerText) === want);
	if (hits.length === 0) return null;
	if (hits.length > 1) return {count: hits.length};
	const a = hits[0];
	a.scrollIntoView({block: 'center', inline: 'center'});
	const r = a.getClientRects()[0];
	const x = r.left + r.width / 2, y = r.top + r.height / 2;
	const top = document.elementFromPoint(x, y);
	return {count: 1, x, y, href: a.href, covered: top && a.contains(top) ? '' : (top ? top.tagName : 'nothing')};
}`

// ClickLink clicks the link (<a>) whose visible text is text (whitespace collapsed, as
// rendered) with the mouse, and waits for the page it leads to to load. Exactly one rendered
// link must match, and nothing may cover it.
func (p *Page) ClickLink(text string) {
	p.t.Helper()
	want := strings.Join(strings.Fields(text), " ")
	what := fmt.Sprintf("ClickLink(%q)", text)
	type hit struct {
		Count   int     `json:"count"`
		X       float64 `json:"x"`
		Y       float64 `json:"y"`
		Href    string  `json:"href"`
		Covered string  `json:"covered"`
	}
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	h, err := chromedp.Run(ctx, chromedp.PollFunction[hit](linkJS, chromedp.WithPollingArgs(want), chromedp.WithPollingTimeout(callTimeout)))
	switch {
	case errors.Is(err, chromedp.ErrPollingTimeout) || errors.Is(err, context.DeadlineExceeded):
		p.fail(what, fmt.Errorf("no rendered link has that text within %v", callTimeout))
	case err != nil:
		p.fail(what, err)
	case h.Count != 1:
		p.fail(what, fmt.Errorf("%d rendered links have that text, want exactly one", h.Count))
	case h.Covered != "":
		p.fail(what, fmt.Errorf("the link is covered by a <%s>", strings.ToLower(h.Covered)))
	}
	p.navigate(what+" to "+h.Href, chromedp.MouseClickXY(h.X, h.Y))
}

// submitJS sends the form an element belongs to as a user would (requestSubmit runs the
// form's validation and submit handlers; a submit button is sent as the submitter). It returns
// why it could not, or "".
const submitJS = `((el) => {
	if (!el) return 'no element matches';
	const form = el instanceof HTMLFormElement ? el : el.form;
	if (!form) return 'the element is not in a form';
	const submitter = el !== form && (el.type === 'submit' || el.type === 'image') ? el : undefined;
	form.requestSubmit(submitter);
	return '';
})`

// Submit submits the form matched by the CSS selector, or the form of the field or submit
// button it matches, and waits for the page the form leads to to load.
func (p *Page) Submit(selector string) {
	p.t.Helper()
	what := fmt.Sprintf("Submit(%q)", selector)
	p.navigate(what,
		chromedp.WaitReady(chromedp.CSS(selector)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			why, err := chromedp.Evaluate[string](submitJS+`(document.querySelector(`+jsString(selector)+`))`)(ctx, tg)
			if err == nil && why != "" {
				err = fmt.Errorf("%s", why)
			}
			return err
		}))
}

// navigate runs actions that start a navigation and waits for the new page to load.
func (p *Page) navigate(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, callTimeout)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, actions...); err != nil {
		p.fail(what+" (no page loaded)", err)
	}
}

// fillJS empties a field and focuses it, so that the keys typed next replace its value.
const fillJS = `((el) => {
	if (!el) return 'no element matches';
	if (!('value' in el)) return 'the element has no value';
	el.value = '';
	el.focus();
	return '';
})`

// Fill replaces the value of the input or textarea matched by the CSS selector by typing
// value into it, key by key, as a user would (a "\n" types Enter, which may submit the form).
func (p *Page) Fill(selector, value string) {
	p.t.Helper()
	p.do(fmt.Sprintf("Fill(%q)", selector),
		chromedp.WaitVisible(chromedp.CSS(selector)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			why, err := chromedp.Evaluate[string](fillJS+`(document.querySelector(`+jsString(selector)+`))`)(ctx, tg)
			if err == nil && why != "" {
				err = fmt.Errorf("%s", why)
			}
			return err
		}),
		chromedp.SendKeys(chromedp.CSS(selector), value))
}

// Screenshot saves a PNG of the whole page (beyond the window, too) as <test>-<name>.png in
// the screenshot directory, logs where, and returns the file's path.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	png := run(p, fmt.Sprintf("Screenshot(%q)", name), chromedp.FullScreenshot(100)) // 100: PNG, not JPEG
	path := filepath.Join(p.b.shotsDir, fileName(p.t.Name()+"-"+name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatalf("browsertest: Screenshot(%q): %v", name, err)
	}
	p.t.Logf("browsertest: screenshot %s", path)
	return path
}

// fileName keeps letters, digits, '.', '-' and '_' of s, replaces the rest with '_', and
// bounds its length: test names have slashes and spaces.
func fileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 150 {
		b = b[:150]
	}
	return string(b)
}

// Cookie is a cookie the browser holds for the page, with the attributes a test checks.
type Cookie struct {
	Name, Value, Domain, Path string
	HTTPOnly, Secure          bool
	SameSite                  string // "Strict", "Lax", "None", or "" when the server set none
	Session                   bool   // no expiry: it ends with the browser
}

// Cookies returns the cookies the browser would send to the page's URL (and its frames').
func (p *Page) Cookies() []Cookie {
	p.t.Helper()
	res := run(p, "Cookies()", func(ctx context.Context, tg *chromedp.Target) (network.GetCookiesResult, error) {
		return cdp.Call(ctx, tg, network.GetCookies, network.GetCookiesParams{})
	})
	out := make([]Cookie, 0, len(res.Cookies))
	for _, c := range res.Cookies {
		if c == nil {
			continue
		}
		out = append(out, Cookie{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite), Session: c.Session,
		})
	}
	return out
}

// Dialogs returns the JavaScript dialogs the tab has opened so far, over all the pages it
// loaded. Every one was dismissed at once (confirm answered false), so the page went on.
func (p *Page) Dialogs() []Dialog { return p.rec.snapshot().dialogs }

// Console returns what the tab's console has shown so far, over all the pages it loaded:
// console calls, uncaught exceptions, and the browser's own log (failed loads, CSP messages).
// At most 1000 messages are kept per tab, each clipped to 2000 bytes.
func (p *Page) Console() []Message { return p.rec.snapshot().messages }

// CSPViolations returns what the Content-Security-Policies of the tab's pages blocked (or
// reported) so far.
func (p *Page) CSPViolations() []CSPViolation { return p.rec.snapshot().csp }

// Scripts returns the scripts the tab's pages have compiled so far, in order: the direct
// evidence of what ran. A <script> element or an event handler in the markup shows up with the
// document's URL the moment it runs; one a CSP blocked never does.
func (p *Page) Scripts() []Script { return p.rec.snapshot().scripts }

// settleJS resolves after the tasks the page has already queued (a setTimeout(f, 0), an
// onerror of a resource that failed) have run.
const settleJS = `new Promise((resolve) => setTimeout(resolve, 0))`

// settle lets the tasks the page has already queued run and waits for the dialogs they opened
// to be dismissed, so that a payload deferred by a timer of 0 is counted too; a payload on a
// longer timer is beyond any such check.
func (p *Page) settle(what string) record {
	p.t.Helper()
	p.do(what+": letting queued tasks run", chromedp.Evaluate[chromedp.Void](settleJS, chromedp.EvalAwaitPromise))
	p.rec.pending.Wait()
	return p.rec.snapshot()
}

// AssertNoDialogs fails the test if the page has opened any JavaScript dialog: pages under
// test never call alert, confirm or prompt, so a dialog means a script payload ran.
func (p *Page) AssertNoDialogs() {
	p.t.Helper()
	r := p.settle("AssertNoDialogs")
	if r.dialogsSeen == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "browsertest: %s opened %d JavaScript dialog(s), so a script ran:", p.URL(), r.dialogsSeen)
	for _, d := range r.dialogs {
		fmt.Fprintf(&b, "\n  %s(%q) from %s", d.Type, d.Message, d.URL)
	}
	writeConsole(&b, r.messages)
	p.t.Error(b.String())
}

// AssertNoScripts fails the test if the page has compiled any script but the files whose
// absolute URLs are in allowed: inline code, an event handler attribute included, means that
// markup became code. A page meant to run no script of its own passes none.
func (p *Page) AssertNoScripts(allowed ...string) {
	p.t.Helper()
	r := p.settle("AssertNoScripts")
	var ran []Script
	for _, s := range r.scripts {
		if !slices.Contains(allowed, s.URL) {
			ran = append(ran, s)
		}
	}
	if len(ran) == 0 && r.scriptsSeen == len(r.scripts) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "browsertest: %s compiled %d script(s), %d not allowed:", p.URL(), r.scriptsSeen, len(ran))
	for _, s := range ran {
		fmt.Fprintf(&b, "\n  %d characters from %s (sha256 %s)", s.Length, s.URL, s.Hash)
	}
	writeConsole(&b, r.messages)
	p.t.Error(b.String())
}

// writeConsole adds the first lines of the console to a failure: they say what else the
// payload did.
func writeConsole(b *strings.Builder, messages []Message) {
	for i, m := range messages {
		if i == 20 {
			fmt.Fprintf(b, "\n  console: %d more", len(messages)-i)
			break
		}
		fmt.Fprintf(b, "\n  console: %s", m)
	}
}
