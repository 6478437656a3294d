package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/queue"
)

// The driver's view of the processes under load: the coordinator's memory from its /metrics,
// the NATS server's from its monitoring port. Both are read over HTTP, as an operator's
// Prometheus would, so they measure separate processes wherever they run.

// scrapeLimit bounds what one scrape reads.
const scrapeLimit = 16 << 20

// getBody GETs url (with a bearer token when set) and hands its body to read.
func getBody(ctx context.Context, hc *http.Client, url, token string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// The URL, never the token.
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(io.LimitReader(resp.Body, scrapeLimit))
}

// coordinatorRSS reads process_resident_memory_bytes from a Prometheus text exposition.
func coordinatorRSS(ctx context.Context, hc *http.Client, url, token string) (int64, error) {
	rss := int64(-1)
	err := getBody(ctx, hc, url, token, func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes ")
			if !ok {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return fmt.Errorf("%s: process_resident_memory_bytes %q: %w", url, v, err)
			}
			rss = int64(f)
			return nil
		}
		return sc.Err()
	})
	if err == nil && rss < 0 {
		err = fmt.Errorf("%s has no process_resident_memory_bytes", url)
	}
	return rss, err
}

// natsMemory reads the server's resident memory ("mem") from its monitoring port's /varz.
func natsMemory(ctx context.Context, hc *http.Client, monitor string) (int64, error) {
	var varz struct {
		Mem *int64 `json:"mem"`
	}
	url := strings.TrimRight(monitor, "/") + "/varz"
	err := getBody(ctx, hc, url, "", func(r io.Reader) error { return json.NewDecoder(r).Decode(&varz) })
	if err == nil && varz.Mem == nil {
		err = fmt.Errorf("%s has no mem", url)
	}
	if err != nil {
		return 0, err
	}
	return *varz.Mem, nil
}

// resultsStored is the results stream's state as the NATS server reports it.
type resultsStored struct {
	Msgs uint64
	// Last is when the server stored the stream's newest message, on its own clock.
	Last time.Time
}

// storedResults reads the results stream's state from the monitoring port's /jsz.
func storedResults(ctx context.Context, hc *http.Client, monitor string) (resultsStored, error) {
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Msgs   uint64    `json:"messages"`
					LastTS time.Time `json:"last_ts"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	url := strings.TrimRight(monitor, "/") + "/jsz?accounts=true&streams=true"
	if err := getBody(ctx, hc, url, "", func(r io.Reader) error { return json.NewDecoder(r).Decode(&jsz) }); err != nil {
		return resultsStored{}, err
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == queue.ResultsStream {
				return resultsStored{Msgs: s.State.Msgs, Last: s.State.LastTS}, nil
			}
		}
	}
	return resultsStored{}, fmt.Errorf("%s lists no stream %s", url, queue.ResultsStream)
}

// memPeaks samples the coordinator's and the NATS server's memory while a run goes.
type memPeaks struct {
	hc                       *http.Client
	metricsURL, metricsToken string
	// monitor is the NATS monitoring URL; empty samples the coordinator only.
	monitor string

	mu          sync.Mutex
	coord, nats memReading
}

// sample takes one reading of each; a failed reading is remembered, not fatal.
func (m *memPeaks) sample(ctx context.Context) {
	rss, cerr := coordinatorRSS(ctx, m.hc, m.metricsURL, m.metricsToken)
	m.mu.Lock()
	m.coord.add(rss, cerr)
	m.mu.Unlock()
	if m.monitor == "" {
		return
	}
	mem, nerr := natsMemory(ctx, m.hc, m.monitor)
	m.mu.Lock()
	m.nats.add(mem, nerr)
	m.mu.Unlock()
}

// run samples now and then every interval until ctx ends.
func (m *memPeaks) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// memReading is a process's memory over a run: the first and the highest sample.
type memReading struct {
	First, Peak int64
	Samples     int
	// Err is the last failed scrape; with no samples, why there is no figure.
	Err error
}

// add counts one sample, or remembers why there is none.
func (r *memReading) add(bytes int64, err error) {
	if err != nil {
		r.Err = err
		return
	}
	if r.Samples == 0 {
		r.First = bytes
	}
	r.Samples++
	r.Peak = max(r.Peak, bytes)
}

func (m *memPeaks) readings() (coord, nats memReading) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coord, m.nats
}
