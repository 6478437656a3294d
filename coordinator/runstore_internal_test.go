package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/queue"
)

// fakeRuns is a RunStore in memory that counts its calls and fails on demand.
type fakeRuns struct {
	values map[string][]byte
	calls  map[string]int
	fail   error // returned by every call when set
	// getFail fails the reads of one key.
	getFail map[string]error
	// eachEntered, when set, is sent to as Each begins, which then waits for eachGate.
	eachEntered chan struct{}
	eachGate    chan struct{}
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{values: map[string][]byte{}, calls: map[string]int{}}
}

func (f *fakeRuns) Put(_ context.Context, key string, value []byte) (uint64, error) {
	f.calls["put"]++
	if f.fail != nil {
		return 0, f.fail
	}
	f.values[key] = slices.Clone(value)
	return uint64(f.calls["put"]), nil
}

func (f *fakeRuns) Get(_ context.Context, key string) ([]byte, uint64, error) {
	f.calls["get"]++
	if f.fail != nil {
		return nil, 0, f.fail
	}
	if err := f.getFail[key]; err != nil {
		return nil, 0, err
	}
	v, ok := f.values[key]
	if !ok {
		return nil, 0, fmt.Errorf("get %s: %w", key, queue.ErrNotFound)
	}
	return v, 1, nil
}

func (f *fakeRuns) Delete(_ context.Context, key string) error {
	f.calls["delete"]++
	delete(f.values, key)
	return f.fail
}

func (f *fakeRuns) Each(_ context.Context, fn func(string, []byte) error) error {
	f.calls["each"]++
	if f.eachEntered != nil {
		f.eachEntered <- struct{}{}
		<-f.eachGate
	}
	if f.fail != nil {
		return f.fail
	}
	keys := slices.Sorted(maps.Keys(f.values))
	for _, k := range keys {
		if err := f.getFail[k]; err != nil {
			return err
		}
		if err := fn(k, f.values[k]); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeRuns) PurgeDeletes(context.Context, time.Duration) (int, error) {
	f.calls["purge"]++
	return 0, f.fail
}

func storeTestCoordinator(runs RunStore) *Coordinator {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return &Coordinator{runStore: runs, log: zap.NewNop(), now: func() time.Time { return at }}
}

func runAt(id string, created time.Time) *pb.RunStatus {
	return &pb.RunStatus{Id: id, State: pb.RunState_RUN_STATE_RUNNING, Spec: &pb.RunSpec{Id: id, CreatedAt: timestamppb.New(created)}}
}

// TestRunStoreSaveKeepsTheKeyInTheStoreOnly: the run's job key is stored (a restarted
// coordinator needs it to check results) but never left on the status callers hold.
func TestRunStoreSaveKeepsTheKeyInTheStoreOnly(t *testing.T) {
	runs := newFakeRuns()
	c := storeTestCoordinator(runs)
	st := runAt("r20261123t120000-aaaaaaaa", c.now())
	key := []byte("0123456789abcdef0123456789abcdef")
	if err := c.save(context.Background(), st, key); err != nil {
		t.Fatal(err)
	}
	if st.JobKey != nil {
		t.Error("the caller's status still holds the job key after save")
	}
	stored := &pb.RunStatus{}
	if err := proto.Unmarshal(runs.values[st.GetId()], stored); err != nil {
		t.Fatal(err)
	}
	if string(stored.GetJobKey()) != string(key) {
		t.Errorf("stored job key %q, want %q", stored.GetJobKey(), key)
	}
	loaded, err := public(c.load(context.Background(), st.GetId()))
	if err != nil {
		t.Fatal(err)
	}
	if loaded.JobKey != nil || loaded.GetId() != st.GetId() {
		t.Errorf("public(load) = id %q key %q, want the run without its key", loaded.GetId(), loaded.GetJobKey())
	}
}

// TestRunStoreLoad: what load answers for each kind of key, and which of them reach the store.
func TestRunStoreLoad(t *testing.T) {
	valid := "r20261123t120000-bbbbbbbb"
	good, err := proto.Marshal(runAt(valid, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		id       string
		stored   []byte
		fail     error
		want     error  // errors.Is target, nil for success
		contains string // in the error text
		gets     int    // store reads expected
	}{
		{name: "stored run", id: valid, stored: good, gets: 1},
		{name: "missing run", id: valid, want: ErrNotFound, gets: 1},
		{name: "invalid id never reaches the store", id: "../../etc", want: ErrNotFound},
		{name: "subject wildcard never reaches the store", id: "r.*", want: ErrNotFound},
		{name: "readiness probe key is not a run", id: probeKey, stored: good, want: ErrNotFound},
		{name: "unreadable value", id: valid, stored: []byte{0xff, 0xff, 0xff}, contains: "unreadable", gets: 1},
		{name: "store failure passes through", id: valid, fail: errors.New("kv down"), contains: "kv down", gets: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := newFakeRuns()
			runs.fail = tc.fail
			if tc.stored != nil {
				runs.values[tc.id] = tc.stored
			}
			c := storeTestCoordinator(runs)
			st, err := c.load(context.Background(), tc.id)
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("err %v, want %v", err, tc.want)
			case tc.contains != "" && (err == nil || !strings.Contains(err.Error(), tc.contains)):
				t.Errorf("err %v, want one saying %q", err, tc.contains)
			case tc.want == nil && tc.contains == "" && (err != nil || st.GetId() != tc.id):
				t.Errorf("load = %v, %v; want run %s", st, err, tc.id)
			}
			if runs.calls["get"] != tc.gets {
				t.Errorf("%d store reads, want %d", runs.calls["get"], tc.gets)
			}
		})
	}
}

// TestRunStoreList: newest first, without the readiness probe and without what cannot be read.
func TestRunStoreList(t *testing.T) {
	runs := newFakeRuns()
	c := storeTestCoordinator(runs)
	base := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for i, id := range []string{"r20261123t000000-aaaaaaaa", "r20261123t000000-cccccccc", "r20261123t000000-bbbbbbbb"} {
		b, err := proto.Marshal(runAt(id, base.Add(time.Duration(i)*time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		runs.values[id] = b
	}
	runs.values[probeKey] = []byte("probe")
	runs.values["r20261123t000000-dddddddd"] = []byte{0xff, 0xff}
	got, err := c.listStored(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range got {
		ids = append(ids, st.GetId())
	}
	want := []string{"r20261123t000000-bbbbbbbb", "r20261123t000000-cccccccc", "r20261123t000000-aaaaaaaa"}
	if !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	// A run that cannot be read is an error, not a shorter list: the retention sweep would take
	// its bundle for unused.
	runs.getFail = map[string]error{"r20261123t000000-cccccccc": errors.New("read timed out")}
	if got, err := c.listStored(context.Background()); err == nil || !strings.Contains(err.Error(), "read timed out") {
		t.Errorf("with one read failing: %d runs, %v; want the read's error", len(got), err)
	}
	runs.getFail = nil
	runs.fail = errors.New("kv down")
	if _, err := c.listStored(context.Background()); err == nil {
		t.Error("a failing store listed runs")
	}
}

// TestRunStoreSaveFailure: a store that refuses the write is an error naming the run, and the
// caller's status is left without the key all the same.
func TestRunStoreSaveFailure(t *testing.T) {
	runs := newFakeRuns()
	runs.fail = errors.New("kv full")
	c := storeTestCoordinator(runs)
	st := runAt("r20261123t120000-eeeeeeee", c.now())
	err := c.save(context.Background(), st, []byte("k"))
	if err == nil || !strings.Contains(err.Error(), st.GetId()) || !strings.Contains(err.Error(), "kv full") {
		t.Errorf("save = %v, want an error naming the run and the cause", err)
	}
	if st.JobKey != nil {
		t.Error("the job key stayed on the status after a failed save")
	}
}
