package sandbox

import "testing"

func TestLimitsClamp(t *testing.T) {
	max := Limits{MemoryBytes: 1 << 30, NanoCPUs: 2e9, Pids: 512, NoFile: 4096, FileSizeBytes: 128 << 20, TmpfsBytes: 128 << 20, OutputBytes: 4 << 20}
	cases := []struct {
		name string
		in   Limits
		max  Limits
		want Limits
	}{
		{"within max stays", DefaultLimits(), max, DefaultLimits()},
		{"above max is clamped", Limits{MemoryBytes: 8 << 30, NanoCPUs: 8e9, Pids: 1e6, NoFile: 1e6, FileSizeBytes: 1 << 40, TmpfsBytes: 1 << 40, OutputBytes: 1 << 40}, max, max},
		{"unset becomes max", Limits{}, max, max},
		{"negative (unlimited to Docker) becomes max", Limits{MemoryBytes: -1, Pids: -1}, Limits{MemoryBytes: 1 << 30, Pids: 100}, Limits{MemoryBytes: 1 << 30, Pids: 100}},
		{"zero max field sets no maximum", Limits{Pids: 10000}, Limits{}, Limits{Pids: 10000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Clamp(tc.max); got != tc.want {
				t.Errorf("Clamp = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	d := DefaultLimits()
	got := Limits{MemoryBytes: 100 << 20, Pids: -5}.WithDefaults(d)
	want := d
	want.MemoryBytes = 100 << 20
	if got != want {
		t.Errorf("WithDefaults = %v; want %v", got, want)
	}
}

func TestConfigLimits(t *testing.T) {
	cases := []struct {
		name        string
		cfg         Config
		suite       Limits
		want        Limits
		wantInvalid bool
	}{
		{name: "defaults everywhere", cfg: Config{WorkerID: "w"}, want: DefaultLimits()},
		{name: "suite cannot exceed default max", cfg: Config{WorkerID: "w"}, suite: Limits{MemoryBytes: 4 << 30}, want: DefaultLimits()},
		{name: "operator raises max", cfg: Config{WorkerID: "w", Max: Limits{MemoryBytes: 2 << 30}}, suite: Limits{MemoryBytes: 1 << 30},
			want: func() Limits { l := DefaultLimits(); l.MemoryBytes = 1 << 30; return l }()},
		{name: "tiny suite limits hit the floor", cfg: Config{WorkerID: "w"}, suite: Limits{MemoryBytes: 1, Pids: 1},
			want: func() Limits {
				l := DefaultLimits()
				l.MemoryBytes = floors.MemoryBytes
				l.Pids = floors.Pids
				return l
			}()},
		{name: "max below floor is a config error", cfg: Config{WorkerID: "w", Max: Limits{MemoryBytes: 1 << 20}}, wantInvalid: true},
		{name: "worker id required", cfg: Config{}, wantInvalid: true},
		{name: "bad seccomp profile", cfg: Config{WorkerID: "w", SeccompProfile: "{not json"}, wantInvalid: true},
		{name: "seccomp profile without defaultAction", cfg: Config{WorkerID: "w", SeccompProfile: `{"syscalls":[]}`}, wantInvalid: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg.withDefaults()
			err := cfg.validate()
			if tc.wantInvalid {
				if err == nil {
					t.Fatal("validate accepted the config")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.suite.WithDefaults(cfg.Defaults).Clamp(cfg.Max).atLeast(floors); got != tc.want {
				t.Errorf("effective limits = %v; want %v", got, tc.want)
			}
		})
	}
}
