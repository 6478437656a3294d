package clock

import (
	"context"
	"testing"
	"time"
)

func TestFakeFiresWhatIsDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		timer     time.Duration
		advance   []time.Duration
		wantFired bool
	}{
		{"not yet", time.Minute, []time.Duration{59 * time.Second}, false},
		{"exactly due", time.Minute, []time.Duration{time.Minute}, true},
		{"due over two steps", time.Minute, []time.Duration{30 * time.Second, 30 * time.Second}, true},
		{"zero fires at once", 0, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(start)
			tm := f.NewTimer(tc.timer)
			for _, d := range tc.advance {
				f.Advance(d)
			}
			select {
			case at := <-tm.C():
				if !tc.wantFired {
					t.Fatalf("fired at %v", at)
				}
				if want := start.Add(tc.timer); !at.Equal(want) {
					t.Errorf("fired with %v, want %v", at, want)
				}
			default:
				if tc.wantFired {
					t.Fatal("did not fire")
				}
			}
		})
	}
}

func TestFakeStopAndTicker(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	tm := f.NewTimer(time.Second)
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop: want true, then false")
	}
	tk := f.NewTicker(time.Second)
	if err := f.WaitFor(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Second)
	<-tk.C()
	f.Advance(3 * time.Second) // one tick kept, the rest dropped
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("a dropped tick was delivered")
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	tk.Stop()
	if n := f.Pending(); n != 0 {
		t.Errorf("Pending = %d after Stop, want 0", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.WaitFor(ctx, 1); err == nil {
		t.Error("WaitFor with nothing running returned nil")
	}
}
