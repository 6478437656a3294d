package skill

import (
	"fmt"
	"slices"

	"github.com/skillfleet/skillfleet/internal/textdist"
)

// The top-level frontmatter fields, in one place. A field in none of these lists is reported as
// frontmatter.unknownField (a warning, or an error with Options.Strict).
var (
	// specFields are the six fields of the agentskills specification, the only ones the
	// reference validator (skills-ref) accepts.
	specFields = []string{"name", "description", "license", "compatibility", "metadata", "allowed-tools"}

	// rfcFields are the fields of the "Skill Dependencies and Testing" RFC, understood and
	// type-checked unless Options.Strict.
	rfcFields = []string{"requires", "test"}

	// extensionFields are platform extensions accepted silently unless Options.Strict: the
	// Claude Code skill fields (context, agent, disable-model-invocation are listed in the
	// platform-extension table; user-invocable, argument-hint, model, hooks and when_to_use are
	// the rest of Claude Code's documented skill frontmatter).
	extensionFields = []string{"context", "agent", "disable-model-invocation", "user-invocable", "argument-hint", "model", "hooks", "when_to_use"}

	// versionField is a top-level version, which several platforms' skill templates carry. It
	// is warned about even without Options.Strict: the RFC reads the version from
	// metadata.version, and a field that tooling will never read is worth a line.
	versionField = "version"
)

// isKnownField reports whether a top-level field is accepted without a diagnostic under opts.
func isKnownField(key string, opts Options) bool {
	return slices.Contains(specFields, key) ||
		(!opts.Strict && (slices.Contains(rfcFields, key) || slices.Contains(extensionFields, key)))
}

// KnownFields returns the top-level fields accepted without a diagnostic under opts.
func KnownFields(opts Options) []string {
	out := slices.Clone(specFields)
	if !opts.Strict {
		out = append(out, rfcFields...)
		out = append(out, extensionFields...)
	}
	return out
}

func unknownFieldMessage(key string, strict bool) string {
	msg := fmt.Sprintf("unknown field %q", clip(key))
	switch {
	case strict && slices.Contains(rfcFields, key):
		msg += " (an RFC field; the specification, which --strict enforces, does not define it)"
	case strict && slices.Contains(extensionFields, key):
		msg += " (a Claude Code platform extension; the specification, which --strict enforces, does not define it)"
	case key == versionField:
		msg += ` (a platform extension); the RFC reads the version from metadata.version (metadata: {version: "1.0.0"})`
	default:
		if near := nearestField(key); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
	}
	return msg
}

// nearestField suggests a known field for a probable misspelling.
func nearestField(key string) string {
	best, bestDist := "", 3
	for _, f := range slices.Concat(specFields, rfcFields, extensionFields) {
		if d := textdist.Levenshtein(key, f); d < bestDist {
			best, bestDist = f, d
		}
	}
	return best
}
