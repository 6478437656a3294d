package coordinator

import (
	"slices"
	"testing"
)

func TestDispatcher(t *testing.T) {
	// a a(serial) b b(serial) a(serial) c
	jobs := []dispatchJob{
		{"a", true, false}, {"s", false, false}, {"b", true, false}, {"s", false, false}, {"t", false, false}, {"s", false, false},
		// A curtailed run's deferred epoch: the run loop's to publish, never the dispatcher's.
		{"b", true, true},
	}
	tests := []struct {
		name        string
		published   int
		done        []int
		wantUngated []int
		wantGated   []int
	}{
		{name: "fresh run", wantUngated: []int{0, 2}, wantGated: []int{1, 4}},
		{name: "resume after one ungated", published: 1, wantUngated: []int{2}, wantGated: []int{1, 4}},
		{name: "resume with serial progress", published: 2, done: []int{1, 4}, wantGated: []int{3}},
		{name: "resume all done", published: 2, done: []int{0, 1, 2, 3, 4, 5, 6}},
		{name: "cursor beyond range clamps", published: 99, wantGated: []int{1, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDispatcher(jobs)
			done := func(i int) bool { return slices.Contains(tt.done, i) }
			u, g := d.start(tt.published, done)
			if !slices.Equal(u, tt.wantUngated) || !slices.Equal(g, tt.wantGated) {
				t.Fatalf("start = %v %v, want %v %v", u, g, tt.wantUngated, tt.wantGated)
			}
		})
	}
}

func TestDispatcherSerialAdvance(t *testing.T) {
	jobs := []dispatchJob{{"s", false, false}, {"s", false, false}, {"s", false, false}, {"p", true, false}}
	d := newDispatcher(jobs)
	doneSet := map[int]bool{}
	done := func(i int) bool { return doneSet[i] }
	_, g := d.start(0, done)
	if !slices.Equal(g, []int{0}) {
		t.Fatalf("first serial job = %v, want [0]", g)
	}
	// A duplicate result for a job that is not in flight must not advance the skill.
	doneSet[2] = true
	if _, ok := d.finished(2, done); ok {
		t.Fatal("a result for a job not in flight advanced the skill")
	}
	doneSet[0] = true
	next, ok := d.finished(0, done)
	if !ok || next != 1 {
		t.Fatalf("after job 0: next = %d, %v; want 1", next, ok)
	}
	doneSet[1] = true
	// Job 2 already has a result, so the skill is finished.
	if next, ok := d.finished(1, done); ok {
		t.Fatalf("after job 1: next = %d, want none (job 2 already done)", next)
	}
	if _, ok := d.finished(3, done); ok {
		t.Fatal("an ungated job advanced a serial skill")
	}
	d.published(1)
	if d.publishedCount() != 1 {
		t.Fatalf("published = %d, want 1", d.publishedCount())
	}
	d.published(5)
	if d.publishedCount() != 1 {
		t.Fatalf("published past the end = %d, want clamped to 1", d.publishedCount())
	}
}
