package judge

import "testing"

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		in      string
		want    Verdict
		wantErr bool
	}{
		{`{"passed": true, "evidence": "ok"}`, Verdict{true, "ok"}, false},
		{" \n{\"evidence\": \"\", \"passed\": false}\n ", Verdict{false, ""}, false},
		{`{"passed": true, "evidence": "a \"quoted\" \u00e9"}`, Verdict{true, `a "quoted" é`}, false},
		{``, Verdict{}, true},
		{`true`, Verdict{}, true},
		{`{}`, Verdict{}, true},
		{`{"passed": 1, "evidence": "x"}`, Verdict{}, true},
		{`{"passed": true, "evidence": ["x"]}`, Verdict{}, true},
		{`{"passed": true, "evidence": {"a": 1}}`, Verdict{}, true},
		{`{"passed": true, "evidence": "x", "extra": null}`, Verdict{}, true},
		{`{"passed": true, "evidence": "x"} trailing`, Verdict{}, true},
		{`{"passed": true, "evidence": "x"`, Verdict{}, true},
		{`{"passed": true "evidence": "x"}`, Verdict{}, true},
		{`{"evidence": "x", "evidence": "y", "passed": true}`, Verdict{}, true},
	}
	for _, tt := range tests {
		got, err := parseVerdict(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseVerdict(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func FuzzParseVerdict(f *testing.F) {
	f.Add(`{"passed": true, "evidence": "ok"}`)
	f.Add(`{"passed": false, "evidence": "x", "passed": true}`)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseVerdict(s)
		if err != nil && v != (Verdict{}) {
			t.Errorf("an error came with a verdict: %+v", v)
		}
	})
}
