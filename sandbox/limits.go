package sandbox

import "fmt"

// Limits bounds what one job's container may use. A zero field means "not set": Runner fills it
// from Config.Defaults, then clamps to Config.Max, so no container ever runs unlimited.
type Limits struct {
	MemoryBytes   int64 // memory cgroup limit; swap is set equal (no extra swap)
	NanoCPUs      int64 // CPU quota in 1e-9 CPUs
	Pids          int64 // processes and threads in the container (pids cgroup)
	NoFile        int64 // RLIMIT_NOFILE, soft = hard
	FileSizeBytes int64 // RLIMIT_FSIZE, soft = hard: largest file a process may write
	TmpfsBytes    int64 // size of each tmpfs work dir (/work, /tmp, /home/sandbox) and /dev/shm
	OutputBytes   int64 // bytes kept per stream (stdout, stderr) per exec; the rest is discarded
}

// DefaultLimits are the limits a job gets when neither the suite nor the operator says more.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes:   512 << 20,
		NanoCPUs:      1_000_000_000,
		Pids:          256,
		NoFile:        1024,
		FileSizeBytes: 64 << 20,
		TmpfsBytes:    64 << 20,
		OutputBytes:   1 << 20,
	}
}

// floors are the smallest limits that still start a container and run a shell: Docker rejects
// memory under 6 MB, and a handful of pids and files are needed by init, sleep and bash.
var floors = Limits{
	MemoryBytes:   16 << 20,
	NanoCPUs:      10_000_000,
	Pids:          16,
	NoFile:        64,
	FileSizeBytes: 1 << 20,
	TmpfsBytes:    1 << 20,
	OutputBytes:   1 << 10,
}

// values and limitsFrom let the field-wise operations below treat Limits as a vector.
func (l Limits) values() [7]int64 {
	return [7]int64{l.MemoryBytes, l.NanoCPUs, l.Pids, l.NoFile, l.FileSizeBytes, l.TmpfsBytes, l.OutputBytes}
}

func limitsFrom(v [7]int64) Limits {
	return Limits{MemoryBytes: v[0], NanoCPUs: v[1], Pids: v[2], NoFile: v[3], FileSizeBytes: v[4], TmpfsBytes: v[5], OutputBytes: v[6]}
}

func (l Limits) zip(o Limits, f func(v, o int64) int64) Limits {
	a, b := l.values(), o.values()
	for i := range a {
		a[i] = f(a[i], b[i])
	}
	return limitsFrom(a)
}

// WithDefaults fills every unset (zero or negative) field from d.
func (l Limits) WithDefaults(d Limits) Limits {
	return l.zip(d, func(v, d int64) int64 {
		if v <= 0 {
			return d
		}
		return v
	})
}

// Clamp returns l with every field at most max's. A field of l that is unset (zero or
// negative, which Docker would read as unlimited) becomes max's. A zero field of max sets no
// maximum for that field.
func (l Limits) Clamp(max Limits) Limits {
	return l.zip(max, func(v, m int64) int64 {
		if m > 0 && (v <= 0 || v > m) {
			return m
		}
		return v
	})
}

func (l Limits) atLeast(min Limits) Limits {
	return l.zip(min, func(v, m int64) int64 {
		if v < m {
			return m
		}
		return v
	})
}

// String is compact and stable: it is part of the warm pool key and of log lines.
func (l Limits) String() string {
	return fmt.Sprintf("mem=%d cpu=%d pids=%d nofile=%d fsize=%d tmpfs=%d out=%d",
		l.MemoryBytes, l.NanoCPUs, l.Pids, l.NoFile, l.FileSizeBytes, l.TmpfsBytes, l.OutputBytes)
}
