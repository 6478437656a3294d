// Package browsertest drives a headless Chromium over the DevTools protocol for the tests that
// must see pages as a browser renders them: it opens loopback and file:// URLs, follows links,
// fills and submits forms, reads text, HTML and cookies, saves screenshots, and records every
// JavaScript dialog, console message, Content-Security-Policy report and compiled script, so
// that a test can prove that a script payload did not run. It is a test helper: only tests
// import it, and the shipped binaries may not link it (internal/archtest).
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The environment variables the package reads.
const (
	// EnvBinary names the browser to run; without it the first of chromium, chromium-browser
	// and google-chrome on PATH runs.
	EnvBinary = "SKILLFLEET_CHROMIUM"
	// EnvRequired set to "required" turns a missing browser into a failure instead of a skip;
	// CI sets it, so the browser tests cannot vanish from a run unnoticed.
	EnvRequired = "SKILLFLEET_TEST_BROWSER"
	// EnvScreenshots is the directory screenshots are written to (absolute, created when
	// missing); without it they go to the test's temporary directory.
	EnvScreenshots = "SKILLFLEET_SCREENSHOTS"
)

// Time limits. Every call to the browser has one, so a page that never loads or a selector
// that never matches fails the test with a reason instead of hanging it until go test's own
// timeout. They are generous because CI machines are shared and a first start loads ~200 MB.
const (
	startTimeout = 45 * time.Second
	callTimeout  = 15 * time.Second
	stopTimeout  = 10 * time.Second
)

// Browser is one headless Chromium process with its own throw-away profile. It ends with the
// test that started it.
type Browser struct {
	t        testing.TB
	ctx      context.Context // the browser's chromedp context; tabs are its children
	binary   string
	profile  string
	shotsDir string
	output   *limitedBuffer // what the browser printed, shown when it fails to start
}

// Start starts a headless Chromium for the test t, and stops it (the whole process tree) and
// removes its profile when t ends. Without a browser the test is skipped, or fails when
// SKILLFLEET_TEST_BROWSER=required.
func Start(t testing.TB) *Browser {
	t.Helper()
	binary, err := findBinary()
	if err != nil {
		if os.Getenv(EnvRequired) == "required" {
			t.Fatalf("browsertest: %v (%s=required)", err, EnvRequired)
		}
		t.Skipf("browsertest: %v; install Debian's chromium (apt-get install chromium) or set %s, and %s=required to fail instead of skipping", err, EnvBinary, EnvRequired)
	}
	shots, err := screenshotDir(t)
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	// The profile is ours, not chromedp's, so that the cleanup below can find every process
	// that uses it and prove the directory gone.
	profile, err := os.MkdirTemp("", "skillfleet-chromium-")
	if err != nil {
		t.Fatalf("browsertest: profile directory: %v", err)
	}
	b := &Browser{t: t, binary: binary, profile: profile, shotsDir: shots, output: &limitedBuffer{max: 16 << 10}}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(binary),
		chromedp.Flag("headless", "new"),
		chromedp.DisableGPU,
		// Chromium refuses to start as root with its sandbox on (it needs an unprivileged
		// user for its namespaces), and CI runs the tests as root in a throw-away machine;
		// as any other user the sandbox stays on. The pages are the project's own, on
		// loopback or in files the test wrote.
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-US"),
		// chromedp's defaults let pages open windows freely; a payload could then run in a
		// tab whose dialogs nobody records. Popups need a user gesture again.
		chromedp.Flag("disable-popup-blocking", false),
		// The browser gets none of the test's environment (tokens, keys), and a home inside
		// its profile so that it writes nothing into the real one.
		chromedp.NoInheritEnv,
		chromedp.Env("PATH="+os.Getenv("PATH"), "HOME="+profile, "XDG_CONFIG_HOME="+profile, "XDG_CACHE_HOME="+profile, "TMPDIR="+os.TempDir()),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Its own process group, so that the cleanup kills the renderers and helpers
			// with it; and killed by the kernel if the test binary dies first.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		}),
		chromedp.CombinedOutput(b.output),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() { b.stop(cancelBrowser, cancelAlloc) })

	// The first call starts the process and binds it to ctx, so it cannot run under a
	// context with a deadline (that would kill the browser when the deadline passed); it is
	// bounded by bounded instead.
	if err := bounded(startTimeout, func() error { return chromedp.Do(ctx) }); err != nil {
		t.Fatalf("browsertest: starting %s: %v\n%s", binary, err, b.output.String())
	}
	t.Logf("browsertest: %s started (pid %d)", binary, b.pid())
	return b
}

// findBinary returns the browser to run: SKILLFLEET_CHROMIUM, or the first of the usual names
// on PATH.
func findBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return path, nil
	}
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	for _, n := range names {
		if path, err := exec.LookPath(n); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("no browser found: none of %v is on PATH and %s is not set", names, EnvBinary)
}

// screenshotDir is SKILLFLEET_SCREENSHOTS, created if missing, or a temporary directory of t.
func screenshotDir(t testing.TB) (string, error) {
	dir := os.Getenv(EnvScreenshots)
	if dir == "" {
		return t.TempDir(), nil
	}
	// go test runs each package in its own directory, so a relative path would scatter the
	// screenshots over the source tree.
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s=%s: the directory must be an absolute path", EnvScreenshots, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", EnvScreenshots, err)
	}
	return dir, nil
}

// pid is the browser's process id, 0 before it runs.
func (b *Browser) pid() int {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	return c.Browser.Process().Pid
}

// stop closes the browser, kills whatever is left of its process group and of the processes
// using its profile, and removes the profile. A process or a directory that survives fails
// the test: a leak would otherwise go unseen until the machine ran out of memory.
func (b *Browser) stop(cancelBrowser, cancelAlloc context.CancelFunc) {
	pid := b.pid()
	// A graceful close first (it lets Chromium flush and exit), bounded; then the hard way.
	_ = bounded(stopTimeout, func() error { return chromedp.Cancel(b.ctx) })
	cancelBrowser()
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	cancelAlloc() // waits for the main process to be reaped
	if left := killProfileUsers(b.profile, 2*time.Second); len(left) > 0 {
		b.t.Errorf("browsertest: processes %v still use the profile %s after the browser stopped", left, b.profile)
	}
	// Helpers that were just killed can still be writing to the profile for a moment.
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = os.RemoveAll(b.profile); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		b.t.Errorf("browsertest: removing the profile: %v", err)
	}
}

// killProfileUsers kills every process whose command line names the profile directory, until
// a few looks in a row find none or limit passes, and returns the pids still alive then.
// Chromium passes the directory to all its children, and its crash handler, which leaves the
// process group (its own session, init its parent), keeps its reports below it; turning the
// handler off (--disable-crashpad-for-testing) made every page load fail with ERR_ABORTED.
func killProfileUsers(profile string, limit time.Duration) []int {
	var alive []int
	quiet := 0
	for deadline := time.Now().Add(limit); quiet < 3; time.Sleep(10 * time.Millisecond) {
		alive = profileUsers(profile)
		for _, pid := range alive {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(alive) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return alive
}

// profileUsers lists the live processes, other than this one, whose command line names the
// profile directory; none where there is no /proc.
func profileUsers(profile string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && namesDir(cmdline, profile) && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// namesDir reports whether a /proc cmdline holds the path dir, whole: followed by the end, a
// separator (NUL between arguments, or a space where Chromium's helpers have rewritten their
// command line into one string) or a path below it, not by more of a longer name.
func namesDir(cmdline []byte, dir string) bool {
	for rest := cmdline; ; {
		i := bytes.Index(rest, []byte(dir))
		if i < 0 {
			return false
		}
		rest = rest[i+len(dir):]
		if len(rest) == 0 || rest[0] == 0 || rest[0] == ' ' || rest[0] == '/' {
			return true
		}
	}
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // gone
	}
	// The state follows the command name, which is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// bounded runs f and waits at most d for it. f keeps running after a timeout until the
// context it uses ends; the callers' contexts all end with the test.
func bounded(d time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("no answer within %v: %w", d, context.DeadlineExceeded)
	}
}

// limitedBuffer keeps the first max bytes written to it; the browser's output can be long and
// only its beginning explains a failed start.
type limitedBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// Write keeps what fits and never fails, so the browser never blocks on its output.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.buf); room > 0 {
		l.buf = append(l.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}
