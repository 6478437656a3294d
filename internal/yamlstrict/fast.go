package yamlstrict

import (
	"bytes"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// The fast reader builds, for the YAML that case files and frontmatter are written in, the
// tree yaml.v3 builds, node for node (kind, style, tag, value, line, column), at a fraction of
// the cost: yaml.v3 spent about 60 µs and 250 allocations per kilobyte of a cases file, most of
// the time of planning 100,000 cases. What it reads:
//
//   - block mappings and block sequences at any indentation, a sequence as a mapping's value
//     at the key's own indentation, and a mapping begun on a sequence entry's line;
//   - one-line scalars: plain, double-quoted (with the one-character escapes) and
//     single-quoted, and one-line flow sequences of them;
//   - printable ASCII and "\n" line breaks only.
//
// Anything else, valid or not (comments, block scalars, flow mappings, anchors, aliases and
// tags, multi-line scalars, documents markers, numbers it does not resolve on sight, tabs,
// other line breaks, any non-ASCII byte), makes it give up, and yaml.v3 reads the text: its
// trees, errors and line numbers stay the reference. TestFastParseIsYAMLv3 and
// FuzzFastParseIsYAMLv3 hold the two to the same trees.

// maxFastDepth bounds the fast reader's recursion; deeper texts are left to yaml.v3.
const maxFastDepth = 1000

// maxKeyBytes keeps the fast reader off keys yaml.v3 may refuse: it allows a simple key 1,024
// characters before its ":".
const maxKeyBytes = 1000

// maxInterned bounds the length of the scalars a reading shares: short values (keys,
// expected words, patterns) repeat from case to case, long ones (prompts) rarely do. They are
// shared through a direct-mapped table of at most maxInternSlots strings, sized to the text.
const (
	maxInterned    = 64
	maxInternSlots = 4096
)

// maxKeptChunks bounds the slabs a Reader keeps for its next text: a typical cases file's
// tree fits in one, and a hostile one does not keep megabytes alive after it is read.
const maxKeptChunks = 4

// Reader parses texts one after another, reusing the memory of each tree for the next, and
// shares the short values it reads across them. The tree Parse returns is valid until the
// Reader's next Parse: for a caller that is done with a tree before it parses another. Not
// safe for concurrent use.
type Reader struct {
	fast fastParser
}

// NewReader returns a Reader.
func NewReader() *Reader { return &Reader{} }

// Parse is the package's Parse, into memory the Reader reuses.
func (r *Reader) Parse(text []byte, o Options) (*yaml.Node, []Problem) {
	return parse(text, o, &r.fast)
}

type fastParser struct {
	text      []byte
	pos       int // the next byte to read
	line      int // 1-based line of pos
	lineStart int // offset of that line's first byte
	depth     int

	// Nodes and their Content slices are carved from slabs, a chunk at a time: slab is the
	// one in use, slabs every one allocated (and reused by the next text of a Reader), and
	// the same for ptrs. kids is the stack of the children of the collections being read.
	slab         []yaml.Node
	ptrs         []*yaml.Node
	slabs        [][]yaml.Node
	ptrSlabs     [][]*yaml.Node
	nslab, nptrs int
	kids         []*yaml.Node
	chunk        int
	// interned holds short scalar values by a hash of their bytes, so that a value read again
	// is not allocated again; a Reader keeps it from text to text.
	interned []string
	buf      []byte
}

// parse returns the tree of the document in text, or ok false when text is not within
// what the fast reader reads (including empty documents, which yaml.v3 reads cheaply). It
// reads into p's memory, which a previous text may have left.
func (p *fastParser) parse(text []byte) (root *yaml.Node, ok bool) {
	if !fastBytes(text) {
		return nil, false
	}
	p.reset(text)
	defer p.release()
	indent := p.contentLine()
	if indent < 0 {
		return nil, false
	}
	root, ok = p.block(indent)
	if !ok || p.contentLine() >= 0 {
		return nil, false
	}
	return root, true
}

// reset readies p for text, reusing what an earlier text left.
func (p *fastParser) reset(text []byte) {
	p.text, p.pos, p.line, p.lineStart, p.depth = text, 0, 1, 0, 0
	p.chunk = min(max(len(text)/16, 16), 4096)
	p.slab, p.ptrs, p.nslab, p.nptrs = nil, nil, 0, 0
	p.kids = p.kids[:0]
	slots := 64
	for slots < maxInternSlots && slots < len(text)/32 {
		slots *= 2
	}
	if len(p.interned) < slots {
		p.interned = make([]string, slots)
	}
}

// release drops what p should not keep for its next text: the text, and slabs beyond
// maxKeptChunks.
func (p *fastParser) release() {
	p.text = nil
	p.slabs = p.slabs[:min(len(p.slabs), maxKeptChunks)]
	p.ptrSlabs = p.ptrSlabs[:min(len(p.ptrSlabs), maxKeptChunks)]
	clear(p.kids[:cap(p.kids)])
}

// fastBytes reports whether text holds only printable ASCII and "\n", no tab, no comment
// marker, and no line that begins like a document marker or directive.
func fastBytes(text []byte) bool {
	for len(text) > 0 {
		if text[0] == '%' || (len(text) >= 3 && (text[0] == '-' || text[0] == '.') && text[1] == text[0] && text[2] == text[0]) {
			return false
		}
		i := 0
		for i < len(text) && text[i] != '\n' {
			if !lineByte[text[i]] {
				return false
			}
			i++
		}
		text = text[min(i+1, len(text)):]
	}
	return true
}

// lineByte is what a line may hold for the fast reader: printable ASCII but "#".
var lineByte = func() (t [256]bool) {
	for b := 0x20; b <= 0x7e; b++ {
		t[b] = b != '#'
	}
	return t
}()

// contentLine moves from the start of a line to the start of the next line holding more than
// spaces and returns its indentation, or -1 when there is none.
func (p *fastParser) contentLine() int {
	for p.pos < len(p.text) {
		i := p.pos
		for i < len(p.text) && p.text[i] == ' ' {
			i++
		}
		if i == len(p.text) {
			p.pos = i
			return -1
		}
		if p.text[i] != '\n' {
			return i - p.pos
		}
		p.pos = i
		p.newline()
	}
	return -1
}

// newline moves past the line break at pos, if any.
func (p *fastParser) newline() {
	if p.pos < len(p.text) {
		p.pos++
		p.line++
		p.lineStart = p.pos
	}
}

// endLine moves past the rest of the line, which must be spaces.
func (p *fastParser) endLine() bool {
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
	if p.pos < len(p.text) && p.text[p.pos] != '\n' {
		return false
	}
	p.newline()
	return true
}

func (p *fastParser) col() int { return p.pos - p.lineStart }

// entry reports whether a block sequence entry ("-" then a space or the line's end) is at i.
func (p *fastParser) entry(i int) bool {
	return i < len(p.text) && p.text[i] == '-' && (i+1 == len(p.text) || p.text[i+1] == ' ' || p.text[i+1] == '\n')
}

// block reads the collection whose first line starts at pos, indented by indent.
func (p *fastParser) block(indent int) (*yaml.Node, bool) {
	if p.depth++; p.depth > maxFastDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	if p.entry(p.pos + indent) {
		return p.sequence(indent)
	}
	p.pos += indent
	return p.mapping(indent)
}

// mapping reads a block mapping whose first key is at pos, in column col (0-based).
func (p *fastParser) mapping(col int) (*yaml.Node, bool) {
	m := p.node(yaml.MappingNode, "!!map", p.line, col+1)
	mark := len(p.kids)
	for {
		k, ok := p.key()
		if !ok {
			return nil, false
		}
		p.kids = append(p.kids, k)
		v, ok := p.value(col)
		if !ok {
			return nil, false
		}
		p.kids = append(p.kids, v)
		n := p.contentLine()
		if n < col {
			break
		}
		if n > col || p.entry(p.pos+n) {
			return nil, false
		}
		p.pos += n
	}
	m.Content = p.children(mark)
	return m, true
}

// key reads a mapping key at pos and the ":" after it.
func (p *fastParser) key() (*yaml.Node, bool) {
	line, col, start := p.line, p.col()+1, p.pos
	var k *yaml.Node
	switch p.text[p.pos] {
	case '"', '\'':
		s, ok := p.quoted()
		if !ok {
			return nil, false
		}
		k = s
		for p.pos < len(p.text) && p.text[p.pos] == ' ' {
			p.pos++
		}
		if !p.valueIndicator(p.pos) {
			return nil, false
		}
	default:
		if indicator(p.text[p.pos]) {
			return nil, false
		}
		i := p.pos
		for !p.valueIndicator(i) {
			if i == len(p.text) || p.text[i] == '\n' {
				return nil, false
			}
			i++
		}
		end := i
		for p.text[end-1] == ' ' {
			end--
		}
		tag, ok := plainTag(p.text[p.pos:end])
		if !ok {
			return nil, false
		}
		k = p.node(yaml.ScalarNode, tag, line, col)
		k.Value = p.str(p.text[p.pos:end])
		p.pos = i
	}
	if p.pos-start > maxKeyBytes {
		return nil, false
	}
	p.pos++ // the ":"
	return k, true
}

// valueIndicator reports whether a ":" that ends a key (followed by a space or the line's
// end) is at i.
func (p *fastParser) valueIndicator(i int) bool {
	return i < len(p.text) && p.text[i] == ':' && (i+1 == len(p.text) || p.text[i+1] == ' ' || p.text[i+1] == '\n')
}

// value reads what follows a key's ":" in a mapping at column col, and the line break that
// ends it.
func (p *fastParser) value(col int) (*yaml.Node, bool) {
	line, ncol := p.line, p.col()+1
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
	if p.pos < len(p.text) && p.text[p.pos] != '\n' {
		v, ok := p.inline()
		if !ok || !p.endLine() {
			return nil, false
		}
		return v, true
	}
	p.newline()
	n := p.contentLine()
	switch {
	case n > col:
		return p.block(n)
	case n == col && p.entry(p.pos+n):
		return p.sequence(col)
	}
	return p.null(line, ncol), true
}

// sequence reads a block sequence whose entries start col spaces into the line at pos.
func (p *fastParser) sequence(col int) (*yaml.Node, bool) {
	s := p.node(yaml.SequenceNode, "!!seq", p.line, col+1)
	mark := len(p.kids)
	for {
		p.pos += col + 1 // the "-"
		line, ncol := p.line, p.col()+1
		for p.pos < len(p.text) && p.text[p.pos] == ' ' {
			p.pos++
		}
		var item *yaml.Node
		ok := true
		switch {
		case p.pos == len(p.text) || p.text[p.pos] == '\n':
			p.newline()
			if n := p.contentLine(); n > col {
				item, ok = p.block(n)
			} else {
				item = p.null(line, ncol)
			}
		case p.keyAhead():
			if p.depth++; p.depth > maxFastDepth {
				return nil, false
			}
			item, ok = p.mapping(p.col())
			p.depth--
		default:
			item, ok = p.inline()
			ok = ok && p.endLine()
		}
		if !ok {
			return nil, false
		}
		p.kids = append(p.kids, item)
		n := p.contentLine()
		if n > col {
			return nil, false
		}
		if n < col || !p.entry(p.pos+n) {
			break
		}
	}
	s.Content = p.children(mark)
	return s, true
}

// keyAhead reports whether the rest of the line from pos begins with a mapping key.
func (p *fastParser) keyAhead() bool {
	i := p.pos
	switch q := p.text[i]; q {
	case '"', '\'':
		for i++; i < len(p.text) && p.text[i] != '\n'; i++ {
			if q == '"' && p.text[i] == '\\' {
				i++
				continue
			}
			if p.text[i] == q {
				if q == '\'' && i+1 < len(p.text) && p.text[i+1] == '\'' {
					i++
					continue
				}
				for i++; i < len(p.text) && p.text[i] == ' '; i++ {
				}
				return p.valueIndicator(i)
			}
		}
		return false
	case '[':
		return false
	}
	for ; i < len(p.text) && p.text[i] != '\n'; i++ {
		if p.valueIndicator(i) {
			return true
		}
	}
	return false
}

// inline reads a scalar or a flow sequence that starts at pos and ends on its line.
func (p *fastParser) inline() (*yaml.Node, bool) {
	switch c := p.text[p.pos]; {
	case c == '"' || c == '\'':
		return p.quoted()
	case c == '[':
		return p.flowSequence()
	case indicator(c):
		return nil, false
	}
	line, col := p.line, p.col()+1
	start, end := p.pos, p.pos
	for ; p.pos < len(p.text) && p.text[p.pos] != '\n'; p.pos++ {
		switch p.text[p.pos] {
		case ' ':
		case ':':
			// ": " or a final ":" would make a mapping here, which yaml.v3 refuses.
			if p.pos+1 == len(p.text) || p.text[p.pos+1] == ' ' || p.text[p.pos+1] == '\n' {
				return nil, false
			}
			end = p.pos + 1
		default:
			end = p.pos + 1
		}
	}
	return p.plain(start, end, line, col)
}

// plain makes the plain scalar text[start:end].
func (p *fastParser) plain(start, end, line, col int) (*yaml.Node, bool) {
	tag, ok := plainTag(p.text[start:end])
	if !ok {
		return nil, false
	}
	n := p.node(yaml.ScalarNode, tag, line, col)
	n.Value = p.str(p.text[start:end])
	return n, true
}

// flowSequence reads a one-line flow sequence of scalars.
func (p *fastParser) flowSequence() (*yaml.Node, bool) {
	s := p.node(yaml.SequenceNode, "!!seq", p.line, p.col()+1)
	s.Style = yaml.FlowStyle
	mark := len(p.kids)
	p.pos++ // the "["
	p.skipSpaces()
	if p.pos < len(p.text) && p.text[p.pos] == ']' {
		p.pos++
		return s, true
	}
	for {
		if p.pos == len(p.text) {
			return nil, false
		}
		var item *yaml.Node
		switch c := p.text[p.pos]; {
		case c == '"' || c == '\'':
			var ok bool
			if item, ok = p.quoted(); !ok {
				return nil, false
			}
		case indicator(c):
			return nil, false
		default:
			line, col := p.line, p.col()+1
			start, end := p.pos, p.pos
		scan:
			for ; p.pos < len(p.text); p.pos++ {
				switch p.text[p.pos] {
				case ',', ']':
					break scan
				case '\n', ':', '?', '[', '{', '}':
					// yaml.v3 ends a plain scalar in a flow at "?" too.
					return nil, false
				case ' ':
				default:
					end = p.pos + 1
				}
			}
			var ok bool
			if item, ok = p.plain(start, end, line, col); !ok {
				return nil, false
			}
		}
		p.kids = append(p.kids, item)
		p.skipSpaces()
		if p.pos == len(p.text) {
			return nil, false
		}
		switch p.text[p.pos] {
		case ']':
			p.pos++
			s.Content = p.children(mark)
			return s, true
		case ',':
			p.pos++
			p.skipSpaces()
			if p.pos < len(p.text) && p.text[p.pos] == ']' {
				return nil, false // a trailing comma: left to yaml.v3
			}
		default:
			return nil, false
		}
	}
}

func (p *fastParser) skipSpaces() {
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
}

// quoted reads a double- or single-quoted scalar that ends on its line.
func (p *fastParser) quoted() (*yaml.Node, bool) {
	line, col := p.line, p.col()+1
	q := p.text[p.pos]
	style := yaml.SingleQuotedStyle
	if q == '"' {
		style = yaml.DoubleQuotedStyle
	}
	// Most quoted scalars hold no escape and end on their line: their value is the text
	// between the quotes, found without a copy byte by byte.
	if end := bytes.IndexByte(p.text[p.pos+1:], q); end >= 0 {
		v := p.text[p.pos+1 : p.pos+1+end]
		next := p.pos + 2 + end
		if bytes.IndexByte(v, '\n') < 0 && (q == '\'' || bytes.IndexByte(v, '\\') < 0) &&
			(q == '"' || next == len(p.text) || p.text[next] != '\'') {
			p.pos = next
			n := p.node(yaml.ScalarNode, "!!str", line, col)
			n.Style = style
			n.Value = p.str(v)
			return n, true
		}
	}
	p.buf = p.buf[:0]
	for p.pos++; p.pos < len(p.text); p.pos++ {
		c := p.text[p.pos]
		switch {
		case c == '\n':
			return nil, false
		case c == q && q == '\'' && p.pos+1 < len(p.text) && p.text[p.pos+1] == '\'':
			p.buf = append(p.buf, '\'')
			p.pos++
		case c == q:
			p.pos++
			n := p.node(yaml.ScalarNode, "!!str", line, col)
			n.Style = style
			n.Value = p.str(p.buf)
			return n, true
		case c == '\\' && q == '"':
			if p.pos+1 == len(p.text) {
				return nil, false
			}
			e := escapes[p.text[p.pos+1]]
			if e == 0 {
				return nil, false
			}
			p.buf = append(p.buf, byte(e-1))
			p.pos++
		default:
			p.buf = append(p.buf, c)
		}
	}
	return nil, false
}

// escapes are the one-character escapes of a double-quoted scalar that stand for one byte,
// plus one (0: not one of them); the others (\x, \u, \U, \N, \_, \L, \P, a line break)
// are left to yaml.v3.
var escapes = [256]uint16{
	'0': 0 + 1, 'a': '\a' + 1, 'b': '\b' + 1, 't': '\t' + 1, 'n': '\n' + 1, 'v': '\v' + 1,
	'f': '\f' + 1, 'r': '\r' + 1, 'e': 0x1b + 1, ' ': ' ' + 1, '"': '"' + 1, '\'': '\'' + 1,
	'\\': '\\' + 1,
}

// indicator reports whether c cannot begin a plain scalar the fast reader reads: YAML's
// indicators, some of which may begin one in some contexts, which yaml.v3 then decides.
func indicator(c byte) bool {
	switch c {
	case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return true
	}
	return false
}

// resolved is the tag of the plain scalars yaml.v3 resolves by name, or "".
func resolved(v []byte) string {
	switch string(v) {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "~", "null", "Null", "NULL":
		return "!!null"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF":
		return "!!float"
	}
	return ""
}

// plainTag is the tag yaml.v3 resolves a plain scalar to (resolve.go: the first byte hints, a
// table names the special values, numbers are parsed). ok is false for what the fast reader
// leaves to yaml.v3: a sign, the merge key, and numbers other than plain decimal integers
// and fractions.
func plainTag(v []byte) (string, bool) {
	switch c := v[0]; {
	case c >= '0' && c <= '9':
		return numberTag(v)
	case c == '+' || c == '-' || c == '<':
		return "", false
	case c == '.':
		if t := resolved(v); t != "" {
			return t, true
		}
		if _, err := strconv.ParseFloat(string(v), 64); err == nil {
			return "!!float", true
		}
	case c == '~' || c == 'n' || c == 'N' || c == 't' || c == 'T' || c == 'f' || c == 'F':
		if t := resolved(v); t != "" {
			return t, true
		}
	}
	return "!!str", true
}

// numberTag resolves a plain scalar that starts with a digit: "0" and decimal integers without
// a leading zero that fit an int64 are !!int, and such an integer (or 0) followed by a
// fraction is !!float. yaml.v3 reads the rest (octal, hexadecimal, binary, exponents,
// underscores, timestamps, and the strings that merely start with a digit).
func numberTag(v []byte) (string, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if (i > 1 && v[0] == '0') || i > 18 {
		return "", false
	}
	if i == len(v) {
		return "!!int", true
	}
	if v[i] != '.' || i+1 == len(v) || len(v) > 32 {
		return "", false
	}
	for _, c := range v[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return "!!float", true
}

// node carves a node from the slab.
func (p *fastParser) node(kind yaml.Kind, tag string, line, col int) *yaml.Node {
	if len(p.slab) == cap(p.slab) {
		if p.nslab == len(p.slabs) {
			p.slabs = append(p.slabs, make([]yaml.Node, 0, p.chunk))
		}
		p.slab = p.slabs[p.nslab][:0]
		p.nslab++
	}
	p.slab = p.slab[:len(p.slab)+1]
	n := &p.slab[len(p.slab)-1]
	*n = yaml.Node{Kind: kind, Tag: tag, Line: line, Column: col}
	return n
}

// null is the empty scalar yaml.v3 makes for a missing value, placed just after its ":" or
// "-".
func (p *fastParser) null(line, col int) *yaml.Node {
	return p.node(yaml.ScalarNode, "!!null", line, col)
}

// children pops the children pushed since mark into a Content slice of their own (capped, so
// that appending to it never writes over a neighbour's).
func (p *fastParser) children(mark int) []*yaml.Node {
	k := p.kids[mark:]
	if len(k) == 0 {
		return nil
	}
	if cap(p.ptrs)-len(p.ptrs) < len(k) {
		for p.nptrs < len(p.ptrSlabs) && cap(p.ptrSlabs[p.nptrs]) < len(k) {
			p.nptrs++ // too small for these children; the next text may use it
		}
		if p.nptrs == len(p.ptrSlabs) {
			p.ptrSlabs = append(p.ptrSlabs, make([]*yaml.Node, 0, max(len(k), p.chunk)))
		}
		p.ptrs = p.ptrSlabs[p.nptrs][:0]
		p.nptrs++
	}
	n := len(p.ptrs)
	p.ptrs = append(p.ptrs, k...)
	p.kids = p.kids[:mark]
	return p.ptrs[n:len(p.ptrs):len(p.ptrs)]
}

// str makes a scalar's value, sharing the short ones this text repeats.
func (p *fastParser) str(b []byte) string {
	if len(b) > maxInterned {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &p.interned[h&uint32(len(p.interned)-1)]
	if *slot == string(b) {
		return *slot
	}
	*slot = string(b)
	return *slot
}
