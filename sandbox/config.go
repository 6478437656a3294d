package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultImage is the sandbox image built from deploy/sandbox.
const DefaultImage = "skillfleet/sandbox:1"

// Config is the operator's sandbox configuration for one worker.
type Config struct {
	Image          string // "" = DefaultImage
	Runtime        string // "" = engine default; e.g. "runsc"
	RequireRuntime bool   // Runtime must be registered with the engine: Start fails closed if not
	// WorkerID labels every container so the reaper can tell whose it is. It must be unique
	// among the workers sharing a Docker engine and stable across restarts of the same worker
	// (a pod name, a hostname): at Start, containers carrying it are leftovers of a previous
	// incarnation and are removed.
	WorkerID string

	Defaults Limits // a job's limits where its suite sets none; zero fields: DefaultLimits
	Max      Limits // the most any suite may ask for; zero fields: the same as Defaults

	WarmPool  int           // started containers kept ready per pool key; 0 disables the pool
	ReapGrace time.Duration // slack past a container's expires label before others reap it (clock skew); default 1m
	// SeccompProfile is "" for the engine's default profile, else the JSON of a stricter one
	// (the content, not a path: through the API seccomp= takes the profile itself).
	SeccompProfile string

	DefaultTimeout  time.Duration // a job's wall clock when Spec.Timeout is 0; default 60s
	MaxTimeout      time.Duration // Spec.Timeout is capped to this; default 30m
	PoolTTL         time.Duration // an idle warm container is discarded after this; default 10m
	PoolMaxKeys     int           // distinct pool keys (image, runtime, mounts, limits) kept warm; default 4
	PoolConcurrency int           // warm containers started in parallel; default 1
	ReapInterval    time.Duration // period of the background reaper; default 1m

	Clock Clock // nil = wall clock
}

func (c Config) withDefaults() Config {
	if c.Image == "" {
		c.Image = DefaultImage
	}
	c.Defaults = c.Defaults.WithDefaults(DefaultLimits())
	c.Max = c.Max.WithDefaults(c.Defaults)
	c.Defaults = c.Defaults.Clamp(c.Max)
	setDur := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	setDur(&c.ReapGrace, time.Minute)
	setDur(&c.DefaultTimeout, 60*time.Second)
	setDur(&c.MaxTimeout, 30*time.Minute)
	setDur(&c.PoolTTL, 10*time.Minute)
	setDur(&c.ReapInterval, time.Minute)
	if c.DefaultTimeout > c.MaxTimeout {
		c.DefaultTimeout = c.MaxTimeout
	}
	if c.PoolMaxKeys <= 0 {
		c.PoolMaxKeys = 4
	}
	if c.PoolConcurrency <= 0 {
		c.PoolConcurrency = 1
	}
	if c.WarmPool < 0 {
		c.WarmPool = 0
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.WorkerID == "" {
		errs = append(errs, errors.New("WorkerID is required (the reaper tells containers apart by it)"))
	}
	for i, v := range c.Max.values() {
		if v < floors.values()[i] {
			errs = append(errs, fmt.Errorf("the Max limits (%s) are below the minimum (%s)", c.Max, floors))
			break
		}
	}
	if c.SeccompProfile != "" {
		if _, err := compactSeccomp(c.SeccompProfile); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox: config: %w", err)
	}
	return nil
}

// compactSeccomp checks that profile is a JSON object with a defaultAction, the one field
// every profile needs, and compacts it: it travels inside every container's HostConfig.
func compactSeccomp(profile string) (string, error) {
	var p struct {
		DefaultAction string `json:"defaultAction"`
	}
	if err := json.Unmarshal([]byte(profile), &p); err != nil {
		return "", fmt.Errorf("SeccompProfile is not a JSON seccomp profile: %w", err)
	}
	if p.DefaultAction == "" {
		return "", errors.New("SeccompProfile has no defaultAction")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(profile)); err != nil {
		return "", fmt.Errorf("SeccompProfile: %w", err)
	}
	return b.String(), nil
}
