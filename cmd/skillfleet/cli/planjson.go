package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// writePlanJSON writes doc exactly as writeJSON would, one job at a time. A plan of 100,000
// jobs is tens of megabytes of indented JSON: encoding it whole builds it twice in memory
// (marshal, then indent) and most of the command's time went into growing those buffers.
func writePlanJSON(w io.Writer, doc planDoc) error {
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
	for i, j := range doc.Jobs {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		if err := encode(j, "    "); err != nil {
			return err
		}
	}
	if len(doc.Jobs) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("],\n  \"diagnostics\": ")
	if err := encode(doc.Diagnostics, "  "); err != nil {
		return err
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}
