package sandbox

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// The warm pool keeps started containers ready so a job skips create and start. Containers
// are job-agnostic (a job's env is given per exec) but not template-agnostic: a pool is keyed
// by image, runtime, mounts and limits, since those are fixed at create. A key starts being
// kept warm after its first cold Acquire; each hit takes one container (used for that job
// only, then removed) and refills in the background, bounded by PoolConcurrency. Keys unused
// for PoolTTL, idle containers older than PoolTTL and keys beyond PoolMaxKeys (least recently
// used first) are dropped.
//
// All fields are guarded by Runner.mu.
type pool struct {
	keys map[string]*poolKey
}

type poolKey struct {
	tmpl     template
	idle     []*launched // oldest first
	filling  int         // containers being started for this key
	lastUsed time.Time
}

func (p *pool) idle() int {
	n := 0
	for _, k := range p.keys {
		n += len(k.idle)
	}
	return n
}

// drain empties the pool and returns its idle containers.
func (p *pool) drain() []*launched {
	var out []*launched
	for key, k := range p.keys {
		out = append(out, k.idle...)
		delete(p.keys, key)
	}
	return out
}

// takeWarm pops an idle container for key that may live until needUntil. Containers too close
// to their expires label for this job are discarded (removed in the background): the reaper
// of any worker may remove a container once its label expires.
func (r *Runner) takeWarm(key string, needUntil time.Time) *launched {
	r.mu.Lock()
	k := r.pool.keys[key]
	if k == nil {
		r.mu.Unlock()
		return nil
	}
	k.lastUsed = r.clock.Now()
	var got *launched
	var stale []*launched
	for len(k.idle) > 0 && got == nil {
		w := k.idle[0]
		k.idle = k.idle[1:]
		if w.expires.Before(needUntil) {
			stale = append(stale, w)
			continue
		}
		got = w
	}
	r.mu.Unlock()
	r.discard(stale)
	return got
}

// wantPool makes sure key is kept warm, evicting the least recently used key beyond
// PoolMaxKeys.
func (r *Runner) wantPool(key string, tmpl template) {
	r.mu.Lock()
	now := r.clock.Now()
	if k := r.pool.keys[key]; k != nil {
		k.lastUsed = now
		r.mu.Unlock()
		return
	}
	var evicted []*launched
	for len(r.pool.keys) >= r.cfg.PoolMaxKeys {
		oldest := ""
		for kk, k := range r.pool.keys {
			if oldest == "" || k.lastUsed.Before(r.pool.keys[oldest].lastUsed) {
				oldest = kk
			}
		}
		evicted = append(evicted, r.pool.keys[oldest].idle...)
		delete(r.pool.keys, oldest)
	}
	r.pool.keys[key] = &poolKey{tmpl: tmpl, lastUsed: now}
	r.mu.Unlock()
	r.discard(evicted)
}

// refill starts containers until key has WarmPool idle or starting.
func (r *Runner) refill(key string) {
	r.mu.Lock()
	k := r.pool.keys[key]
	if k == nil || r.state != stateStarted {
		r.mu.Unlock()
		return
	}
	need := r.cfg.WarmPool - len(k.idle) - k.filling
	if need <= 0 {
		r.mu.Unlock()
		return
	}
	k.filling += need
	tmpl := k.tmpl
	r.mu.Unlock()
	for range need {
		if !r.goBackground(func(ctx context.Context) { r.fillOne(ctx, key, k, tmpl) }) {
			r.mu.Lock()
			k.filling--
			r.mu.Unlock()
		}
	}
}

// fillOne starts one warm container for k (the pool entry for key when refill ran). If k was
// dropped meanwhile, the container is removed again.
func (r *Runner) fillOne(ctx context.Context, key string, k *poolKey, tmpl template) {
	select {
	case r.poolSem <- struct{}{}:
		defer func() { <-r.poolSem }()
	case <-ctx.Done():
		r.mu.Lock()
		k.filling--
		r.mu.Unlock()
		return
	}
	// Warm containers are labelled to outlive an idle stay plus the longest job.
	expires := r.clock.Now().Add(r.cfg.PoolTTL + r.cfg.MaxTimeout + startAllowance)
	l, err := r.launch(ctx, tmpl, "", key, expires)
	r.mu.Lock()
	k.filling--
	if err != nil {
		r.mu.Unlock()
		if ctx.Err() == nil {
			r.log.Warn("warm pool: cannot start a container", zap.String("pool", key), zap.Error(err))
		}
		return
	}
	if r.pool.keys[key] != k || r.state != stateStarted {
		r.mu.Unlock()
		_ = r.remove(ctx, l.id)
		return
	}
	k.idle = append(k.idle, l)
	r.mu.Unlock()
}

// expirePool drops idle containers older than PoolTTL and keys unused for PoolTTL.
func (r *Runner) expirePool() {
	r.mu.Lock()
	now := r.clock.Now()
	var stale []*launched
	for key, k := range r.pool.keys {
		keep := k.idle[:0]
		for _, w := range k.idle {
			if now.Sub(w.created) > r.cfg.PoolTTL {
				stale = append(stale, w)
			} else {
				keep = append(keep, w)
			}
		}
		k.idle = keep
		if now.Sub(k.lastUsed) > r.cfg.PoolTTL {
			stale = append(stale, k.idle...)
			if k.filling == 0 {
				delete(r.pool.keys, key)
			} else {
				k.idle = nil
			}
		}
	}
	r.mu.Unlock()
	r.discard(stale)
}

// discard removes containers the pool no longer wants, in the background when it can.
func (r *Runner) discard(ws []*launched) {
	for _, w := range ws {
		id := w.id
		if !r.goBackground(func(ctx context.Context) { _ = r.remove(ctx, id) }) {
			_ = r.remove(context.Background(), id)
		}
	}
}
