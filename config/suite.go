// Package config reads skillfleet.yaml, the settings a suite's author chooses for its runs.
// Operator settings (endpoints, keys, maxima) are never read from a suite: a suite is untrusted.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	units "github.com/docker/go-units"
	"go.yaml.in/yaml/v3"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/skill"
)

// FileName is the suite configuration file, looked for at the root of a suite.
const FileName = "skillfleet.yaml"

// maxFileBytes bounds the file; it is a few lines.
const maxFileBytes = 64 << 10

// Suite is skillfleet.yaml.
type Suite struct {
	// Sandbox are the limits every job of the suite asks for. Workers clamp them to the
	// maxima their operator set, so a suite can ask for less, never for more.
	Sandbox Limits `yaml:"sandbox"`
}

// Limits are the per-job sandbox limits, in human units: sizes like "256Mi" or "1g", CPUs as
// a decimal.
type Limits struct {
	Memory   string  `yaml:"memory"`
	CPUs     float64 `yaml:"cpus"`
	Pids     int64   `yaml:"pids"`
	FileSize string  `yaml:"file_size"`
	Output   string  `yaml:"output"`
}

// Find returns the skillfleet.yaml of the first root that has one, or "".
func Find(roots []string) string {
	for _, r := range roots {
		p := filepath.Join(r, FileName)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// Load reads and checks a skillfleet.yaml. Problems are diagnostics naming the file, the line
// and the rule, like every other input error.
func Load(path string) (*Suite, *pb.Limits, skill.Diagnostics) {
	limits := &pb.Limits{}
	diag := func(line int, rule, format string, args ...any) skill.Diagnostics {
		return skill.Diagnostics{{Rule: rule, Severity: skill.SeverityError, File: path, Line: line, Message: fmt.Sprintf(format, args...)}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, diag(0, "config.file", "cannot read %s: it does not exist", FileName)
		}
		return nil, nil, diag(0, "config.file", "cannot read %s: %v", FileName, err)
	}
	if len(data) > maxFileBytes {
		return nil, nil, diag(0, "config.file", "%s is %d bytes, more than %d", FileName, len(data), maxFileBytes)
	}
	var s Suite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) { // an empty file configures nothing
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return nil, nil, diag(line, "config.yaml", "%v", err)
	}
	var node yaml.Node
	_ = yaml.Unmarshal(data, &node)
	lineOf := func(key string) int { return keyLine(&node, "sandbox", key) }

	var diags skill.Diagnostics
	size := func(key, v string) int64 {
		if v == "" {
			return 0
		}
		if last := v[len(v)-1]; last == 'i' || last == 'I' {
			v += "B" // Kubernetes-style "256Mi" reads as 256MiB
		}
		n, err := units.RAMInBytes(v)
		if err != nil || n <= 0 {
			diags = append(diags, diag(lineOf(key), "config.sandbox."+key, "%s must be a size such as 256Mi or 1g, got %q", key, v)...)
			return 0
		}
		return n
	}
	limits.MemoryBytes = size("memory", s.Sandbox.Memory)
	limits.FileSizeBytes = size("file_size", s.Sandbox.FileSize)
	limits.OutputBytes = size("output", s.Sandbox.Output)
	if s.Sandbox.CPUs < 0 || s.Sandbox.CPUs > 1024 {
		diags = append(diags, diag(lineOf("cpus"), "config.sandbox.cpus", "cpus must be between 0 and 1024, got %v", s.Sandbox.CPUs)...)
	}
	limits.NanoCpus = int64(s.Sandbox.CPUs * 1e9)
	if s.Sandbox.Pids < 0 {
		diags = append(diags, diag(lineOf("pids"), "config.sandbox.pids", "pids must be positive, got %d", s.Sandbox.Pids)...)
	}
	limits.Pids = s.Sandbox.Pids
	if diags.HasErrors() {
		return nil, nil, diags
	}
	return &s, limits, nil
}

// keyLine finds the line of parent.key in a document, or 0.
func keyLine(doc *yaml.Node, parent, key string) int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return 0
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != parent {
			continue
		}
		p := m.Content[i+1]
		for j := 0; j+1 < len(p.Content); j += 2 {
			if p.Content[j].Value == key {
				return p.Content[j].Line
			}
		}
		return m.Content[i].Line
	}
	return 0
}
