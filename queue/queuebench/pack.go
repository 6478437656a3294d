package queuebench

import (
	"encoding/binary"
	"errors"

	"github.com/nats-io/nats.go"
)

// Pack appends msgs (subject, headers, data) to dst in a flat encoding Unpack reads, and
// returns the extended buffer. A benchmark keeps the raw baseline's 20,000 job messages between
// its rounds this way, on disk: as Msgs they are some 40 MB of small objects (a message, its
// header map and strings) that the garbage collector would mark in every cycle of whatever is
// measured meanwhile, and as one buffer on the heap, 16 MB of the process's memory limit.
func Pack(dst []byte, msgs Msgs) []byte {
	str := func(s string) { dst = append(binary.AppendUvarint(dst, uint64(len(s))), s...) }
	dst = binary.AppendUvarint(dst, uint64(len(msgs)))
	for _, m := range msgs {
		str(m.Subject)
		dst = binary.AppendUvarint(dst, uint64(len(m.Header)))
		for k, vs := range m.Header {
			str(k)
			dst = binary.AppendUvarint(dst, uint64(len(vs)))
			for _, v := range vs {
				str(v)
			}
		}
		dst = append(binary.AppendUvarint(dst, uint64(len(m.Data))), m.Data...)
	}
	return dst
}

var errPackedShort = errors.New("queuebench: packed messages cut short")

// Unpack returns the messages Pack wrote to b, as new copies in the order they were packed.
func Unpack(b []byte) (Msgs, error) {
	count := func() (int, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			return 0, errPackedShort
		}
		b = b[k:]
		return int(n), nil
	}
	field := func() ([]byte, error) {
		n, err := count()
		if err != nil || n > len(b) {
			return nil, errPackedShort
		}
		f := b[:n]
		b = b[n:]
		return f, nil
	}
	n, err := count()
	if err != nil {
		return nil, err
	}
	out := make(Msgs, 0, n)
	for range n {
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
		out = append(out, m)
	}
	if len(b) > 0 {
		return nil, errors.New("queuebench: bytes left after the packed messages")
	}
	return out, nil
}
