package assert

import (
	"math/big"
	"strconv"
	"strings"
)

// numberKey gives a JSON number literal a canonical form, so that two literals have the same
// key exactly when they denote the same decimal value: "1", "1.0", "1e0", "10e-1" and "-0" vs
// "0" compare equal; "1" and "1.0000000000000000001" do not. It never converts to float64 (which
// would round) nor expands the exponent (which would let "1e999999999" allocate a gigabyte).
// ok is false when s is not a JSON number.
func numberKey(s string) (key string, ok bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return "", false
	}
	intDigits := s[intStart:i]
	fracDigits := ""
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return "", false
		}
		fracDigits = s[start:i]
	}
	expNeg, expDigits := false, "0"
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			expNeg = s[i] == '-'
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return "", false
		}
		expDigits = s[start:i]
	}
	if i != len(s) {
		return "", false
	}

	// value = mant × 10^(exp − len(frac)); strip the zeros that do not change it.
	mant := strings.TrimLeft(intDigits+fracDigits, "0")
	if mant == "" {
		return "0", true
	}
	trimmed := strings.TrimRight(mant, "0")
	shift := int64(len(mant)-len(trimmed)) - int64(len(fracDigits))

	var exp string
	if expDigits = strings.TrimLeft(expDigits, "0"); len(expDigits) <= 15 {
		e, _ := strconv.ParseInt("0"+expDigits, 10, 64)
		if expNeg {
			e = -e
		}
		exp = strconv.FormatInt(e+shift, 10)
	} else {
		e, _ := new(big.Int).SetString(expDigits, 10)
		if expNeg {
			e.Neg(e)
		}
		exp = e.Add(e, big.NewInt(shift)).String()
	}
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + exp, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// numbersEqual compares two JSON number literals by value.
func numbersEqual(a, b string) bool {
	if a == b {
		return true
	}
	ka, okA := numberKey(a)
	kb, okB := numberKey(b)
	return okA && okB && ka == kb
}
