package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"time"
)

// pageTiming is how long one page or route took to answer in full, median and slowest of
// its tries.
type pageTiming struct {
	Name, Path    string
	Median, Worst time.Duration
	Bytes         int64
	Err           error
}

// pageTries is how many times each page is asked for.
const pageTries = 5

// timePages asks, once the run is final, for what a reader of one case asks for — its
// results and its trajectory through the API, its page and its run's page in the viewer
// (logged in with the token) — and for the run's status, each pageTries times: how long they
// take at the run's size. skill, caseName and agent name the case, one in the middle of the
// suite.
func timePages(ctx context.Context, base, token, run, skill, caseName, agent string) []pageTiming {
	base = strings.TrimRight(base, "/")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Timeout: time.Minute, Jar: jar}
	login := url.Values{"token": {token}, "next": {"/"}}
	// The viewer's login: a session cookie for the pages.
	loginErr := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(login.Encode()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if u, _ := url.Parse(base); len(jar.Cookies(u)) == 0 {
			return fmt.Errorf("POST /login: %s, no session", resp.Status)
		}
		return nil
	}()
	c := url.Values{"skill": {skill}, "case": {caseName}}
	if agent != "" {
		c.Set("agent", agent)
	}
	pages := []struct {
		name, path string
		api        bool
	}{
		{"API: the run's status", "/v1/runs/" + run, true},
		{"API: one case's results", "/v1/runs/" + run + "/results?" + url.Values{"case": {skill + "/" + caseName}}.Encode(), true},
		{"API: one case's trajectory", "/v1/runs/" + run + "/trajectory?" + c.Encode(), true},
		{"viewer: the run's page", "/runs/" + run, false},
		{"viewer: the case's page", "/runs/" + run + "/cases?" + c.Encode(), false},
	}
	var out []pageTiming
	for _, p := range pages {
		t := pageTiming{Name: p.name, Path: p.path}
		if !p.api && loginErr != nil {
			t.Err = loginErr
			out = append(out, t)
			continue
		}
		var took []time.Duration
		for range pageTries {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+p.path, nil)
			if err != nil {
				t.Err = err
				break
			}
			if p.api {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			start := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				t.Err = err
				break
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took = append(took, time.Since(start))
			t.Bytes = n
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("GET %s: %s", p.path, resp.Status)
			}
			if err != nil {
				t.Err = err
				break
			}
		}
		if len(took) > 0 {
			slices.Sort(took)
			t.Median, t.Worst = took[len(took)/2], took[len(took)-1]
		}
		out = append(out, t)
	}
	return out
}

// describe is t in words for the measurement's rows.
func (t pageTiming) describe() string {
	if t.Err != nil {
		return "not measured: " + t.Err.Error()
	}
	return fmt.Sprintf("median %.0f ms, slowest %.0f ms of %d (%d bytes): GET %s", float64(t.Median.Microseconds())/1000, float64(t.Worst.Microseconds())/1000, pageTries, t.Bytes, t.Path)
}
