package suite

import (
	"go.yaml.in/yaml/v3"

	"github.com/skillfleet/skillfleet/assert"
)

// fileAssertions reads a file assertion's value by its form (assert.FormPaths, assert.FormFile)
// into c. key is how the case file wrote the kind (file_contains, or file-contains in a
// command case's expected block), for messages. It reports whether the form was one it reads.
func (r *reader) fileAssertions(c *Case, t assert.Type, key string, p pair) bool {
	switch t.Form() {
	case assert.FormPaths:
		vals, lines, _ := r.strList(p.val, key, "assertion.type")
		for i, v := range vals {
			a := assert.New(t)
			a.Path = v
			r.add(c, a, lines[i])
		}
	case assert.FormFile:
		n := r.deref(p.val)
		if n == nil {
			return true
		}
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
			if len(items) == 0 {
				r.errorf(n.Line, "assertion.type", "%s is an empty list", key)
			}
		}
		for _, item := range items {
			r.fileItem(c, t, key, item)
		}
	default:
		return false
	}
	return true
}

// fileItem reads one {path, text|pattern|json} mapping.
func (r *reader) fileItem(c *Case, t assert.Type, key string, n *yaml.Node) {
	n = r.deref(n)
	if n == nil {
		return
	}
	valueKey := t.FileValueKey()
	if n.Kind != yaml.MappingNode {
		r.errorf(n.Line, "assertion.type", "%s must be a mapping {%s, %s} or a list of them, got %s",
			key, assert.FilePath, valueKey, kindName(n))
		return
	}
	pairs, ok := r.mapping(n, key, "assertion", map[string]bool{assert.FilePath: true, valueKey: true})
	if !ok {
		return
	}
	before := len(r.diags)
	a := assert.New(t)
	have := map[string]bool{}
	for _, q := range pairs {
		have[q.key] = true
		switch q.key {
		case assert.FilePath:
			a.Path, _ = r.str(q.val, key+" "+assert.FilePath, "assertion.path")
		case assert.FileDoc:
			a.JSON = r.fileJSON(key, q)
		default:
			a.Value, _ = r.str(q.val, key+" "+valueKey, "assertion.type")
		}
	}
	for _, k := range []string{assert.FilePath, valueKey} {
		if !have[k] {
			r.errorf(n.Line, "assertion.invalid", "%s needs `%s`", key, k)
		}
	}
	if len(r.diags) == before {
		r.add(c, a, n.Line)
	}
}

// fileJSON reads file_json's expected document within stdout-json's caps.
func (r *reader) fileJSON(key string, q pair) any {
	if v := r.deref(q.val); v != nil && v.Tag == "!!null" {
		r.errorf(q.line, "assertion.invalid", "%s: the expected JSON document is null; write the document the file must match", key)
		return nil
	}
	r.nodes = 0
	v, ok := r.value(q.val, 0, "assertion.invalid")
	if !ok {
		return nil
	}
	doc, size, err := canonicalJSON(v)
	if err != nil {
		r.errorf(q.line, "assertion.invalid", "%s: %v", key, err)
		return nil
	}
	if size > maxJSONBytes {
		r.errorf(q.line, ruleTooLarge, "%s json is %d bytes as JSON, more than %d; compare a smaller document", key, size, maxJSONBytes)
		return nil
	}
	return doc
}
