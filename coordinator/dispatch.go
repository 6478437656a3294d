package coordinator

// dispatcher decides which jobs of a run to publish and when. Jobs of parallel skills are
// published at once in plan order; jobs of `parallel: false` skills are published one at a time
// per skill, the next only after the previous one has its final result, which makes them run
// one at a time fleet-wide without any lock a dead worker could hold.
//
// It keeps no state of its own that cannot be rebuilt: after a coordinator restart, the run's
// results (replayed from JetStream) and the published cursor (from KV) give the same decisions.
type dispatcher struct {
	// ungated holds indices into the plan's jobs, in plan order.
	ungated []int
	// cursor counts ungated jobs already published.
	cursor int
	// gated maps a serial skill to its job indices in plan order, and gatedPos to the position
	// of the job currently in flight (len(gated[s]) when the skill is finished).
	gated    map[string][]int
	gatedPos map[string]int
	order    []string       // gated skills in plan order, for deterministic output
	skillOf  map[int]string // gated job index → skill name
}

// dispatchJob is what the dispatcher needs to know of a planned job.
type dispatchJob struct {
	skill    string
	parallel bool
	// deferred is a curtailed run's epoch beyond its case's first window: the run loop
	// publishes it when the case's results call for it (see curtail.go), never the dispatcher.
	deferred bool
}

func newDispatcher(jobs []dispatchJob) *dispatcher {
	d := &dispatcher{
		gated:    make(map[string][]int),
		gatedPos: make(map[string]int),
		skillOf:  make(map[int]string),
	}
	for i, j := range jobs {
		if j.deferred {
			continue
		}
		if j.parallel {
			d.ungated = append(d.ungated, i)
			continue
		}
		if _, ok := d.gated[j.skill]; !ok {
			d.order = append(d.order, j.skill)
		}
		d.gated[j.skill] = append(d.gated[j.skill], i)
		d.skillOf[i] = j.skill
	}
	return d
}

// start returns the jobs to publish when a run starts or resumes: the ungated jobs from the
// cursor on, and for each serial skill its first job without a result. done reports whether a
// job already has its final result.
func (d *dispatcher) start(published int, done func(int) bool) (ungated, gated []int) {
	d.cursor = min(max(published, 0), len(d.ungated))
	ungated = d.ungated[d.cursor:]
	for _, s := range d.order {
		pos := 0
		for pos < len(d.gated[s]) && done(d.gated[s][pos]) {
			pos++
		}
		d.gatedPos[s] = pos
		if pos < len(d.gated[s]) {
			gated = append(gated, d.gated[s][pos])
		}
	}
	return ungated, gated
}

// published records that n more ungated jobs are safely in the stream.
func (d *dispatcher) published(n int) { d.cursor = min(d.cursor+n, len(d.ungated)) }

// publishedCount is the cursor to persist.
func (d *dispatcher) publishedCount() int { return d.cursor }

// finished reports a job's final result and returns the serial job to publish next, if any.
// Results may arrive for jobs that are not the one in flight (a duplicate delivery): only the
// in-flight job advances its skill.
func (d *dispatcher) finished(job int, done func(int) bool) (next int, ok bool) {
	s, gated := d.skillOf[job]
	if !gated {
		return 0, false
	}
	jobs := d.gated[s]
	pos := d.gatedPos[s]
	if pos >= len(jobs) || jobs[pos] != job {
		return 0, false
	}
	for pos < len(jobs) && done(jobs[pos]) {
		pos++
	}
	d.gatedPos[s] = pos
	if pos < len(jobs) {
		return jobs[pos], true
	}
	return 0, false
}
