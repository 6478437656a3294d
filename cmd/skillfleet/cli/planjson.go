package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// writePlanJSON writes doc with jobs as its Jobs exactly as writeJSON would write it, one job
// at a time as jobs makes them. A plan of 100,000
// jobs is tens of megabytes of indented JSON: encoding it whole builds it twice in memory
// (marshal, then indent) and most of the command's time went into growing those buffers; and
// encoding/json's reflection, job by job, still cost more than the rest of writing the plan.
// So a job is written here, field by field, in planJob's order and with its omitempty rules.
func writePlanJSON(w io.Writer, doc planDoc, jobs jobList) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encode appends v's JSON, indented for the nesting depth that prefix gives, without the
	// encoder's trailing newline.
	encode := func(v any, prefix string) error {
		buf.Reset()
		enc.SetIndent(prefix, "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	bw.WriteString("{\n  \"suite_digest\": ")
	if err := encode(doc.SuiteDigest, "  "); err != nil {
		return err
	}
	bw.WriteString(",\n  \"jobs\": [")
	var line []byte
	for i := range jobs.len() {
		if i > 0 {
			bw.WriteString(",")
		}
		line = appendPlanJob(line[:0], jobs.at(i))
		bw.Write(line)
	}
	if jobs.len() > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"diagnostics\": ")
	if err := encode(doc.Diagnostics, "  "); err != nil {
		return err
	}
	if doc.Power != nil {
		bw.WriteString(",\n  \"power\": ")
		if err := encode(doc.Power, "  "); err != nil {
			return err
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// jobList is the jobs writePlanJSON writes, made one at a time.
type jobList interface {
	len() int
	at(i int) planJob
}

// appendPlanJob appends j as an element of the jobs array: a line break, then the object
// indented as encoding/json indents it at that depth.
func appendPlanJob(b []byte, j planJob) []byte {
	b = append(b, "\n    {\n      \"id\": "...)
	b = appendJSONString(b, j.ID)
	b = append(b, ",\n      \"skill\": "...)
	b = appendJSONString(b, j.Skill)
	b = append(b, ",\n      \"case\": "...)
	b = appendJSONString(b, j.Case)
	b = append(b, ",\n      \"kind\": "...)
	b = appendJSONString(b, j.Kind)
	b = append(b, ",\n      \"epoch\": "...)
	b = strconv.AppendInt(b, int64(j.Epoch), 10)
	b = append(b, ",\n      \"timeout_ms\": "...)
	b = strconv.AppendInt(b, j.TimeoutMS, 10)
	b = append(b, ",\n      \"parallel\": "...)
	b = strconv.AppendBool(b, j.Parallel)
	for _, f := range [...]struct{ key, value string }{{"agent", j.Agent}, {"arm", j.Arm}, {"reuse_from", j.ReuseFrom}} {
		if f.value != "" {
			b = append(b, ",\n      \""...)
			b = append(b, f.key...)
			b = append(b, "\": "...)
			b = appendJSONString(b, f.value)
		}
	}
	return append(b, "\n    }"...)
}

// appendJSONString appends s as encoding/json writes it without HTML escaping. Strings of
// printable ASCII other than a quote or a backslash (every id, kind and generated name) are
// copied; any other string is left to encoding/json, which decides its escapes.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
