package queuebench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Packed holds messages in one pointer-free buffer. A benchmark that keeps the raw baseline's
// 20,000 job messages between its rounds as Msgs keeps some 40 MB of small objects (a message,
// its header map and strings) that the garbage collector marks in every cycle of whatever runs
// meanwhile; packed, they are two allocations it never looks into.
type Packed struct {
	buf  []byte
	ends []int
}

// Pack copies msgs (subject, headers, data) into a Packed.
func Pack(msgs Msgs) *Packed {
	size := 0
	for _, m := range msgs {
		size += len(m.Subject) + len(m.Data) + 16
		for k, vs := range m.Header {
			size += len(k) + 8
			for _, v := range vs {
				size += len(v) + 4
			}
		}
	}
	p := &Packed{buf: make([]byte, 0, size), ends: make([]int, 0, len(msgs))}
	str := func(s string) { p.buf = append(binary.AppendUvarint(p.buf, uint64(len(s))), s...) }
	for _, m := range msgs {
		str(m.Subject)
		p.buf = binary.AppendUvarint(p.buf, uint64(len(m.Header)))
		for k, vs := range m.Header {
			str(k)
			p.buf = binary.AppendUvarint(p.buf, uint64(len(vs)))
			for _, v := range vs {
				str(v)
			}
		}
		p.buf = append(binary.AppendUvarint(p.buf, uint64(len(m.Data))), m.Data...)
		p.ends = append(p.ends, len(p.buf))
	}
	return p
}

// Len is how many messages p holds.
func (p *Packed) Len() int { return len(p.ends) }

// Msgs returns new copies of the messages p holds, in the order they were packed.
func (p *Packed) Msgs() (Msgs, error) {
	out := make(Msgs, 0, len(p.ends))
	rest := p.buf
	field := func() ([]byte, error) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return nil, errors.New("queuebench: packed messages cut short")
		}
		b := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return b, nil
	}
	count := func() (int, error) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)) {
			return 0, errors.New("queuebench: packed messages cut short")
		}
		rest = rest[k:]
		return int(n), nil
	}
	for i := range p.ends {
		subject, err := field()
		if err != nil {
			return nil, err
		}
		m := &nats.Msg{Subject: string(subject)}
		keys, err := count()
		if err != nil {
			return nil, err
		}
		if keys > 0 {
			m.Header = make(nats.Header, keys)
		}
		for range keys {
			k, err := field()
			if err != nil {
				return nil, err
			}
			nv, err := count()
			if err != nil {
				return nil, err
			}
			vs := make([]string, nv)
			for j := range vs {
				v, err := field()
				if err != nil {
					return nil, err
				}
				vs[j] = string(v)
			}
			m.Header[string(k)] = vs
		}
		data, err := field()
		if err != nil {
			return nil, err
		}
		m.Data = append([]byte(nil), data...)
		if len(p.buf)-len(rest) != p.ends[i] {
			return nil, fmt.Errorf("queuebench: packed message %d does not end where it was packed", i)
		}
		out = append(out, m)
	}
	return out, nil
}
