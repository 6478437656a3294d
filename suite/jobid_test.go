package suite

import "testing"

// TestJobIDsStable pins job ids as they have always been derived: history, dashboards and
// resumed runs follow a test by its id, so a faster derivation must give the same ones.
func TestJobIDsStable(t *testing.T) {
	tests := []struct {
		skill, name string
		kind        Kind
		epoch       int
		agent       string
		arm         Arm
		want        string
	}{
		{"pdf", "extracts-text", KindPrompt, 1, "", ArmWithSkill, "j098f7fc69c371c84e9f3"},
		{"pdf", "extracts-text", KindPrompt, 3, "claude", ArmWithoutSkill, "j127a938d5d74a1a8fbcc"},
		{"skill-00999", "echo", KindCommand, 1, "", "", "ja9ce48c4d6194c673770"},
		{"s", "c", KindPrompt, 1000, "a\x00b", ArmOldSkill, "j83c6cce28c8a8ad907f0"},
	}
	for _, tt := range tests {
		if got := ArmJobID(tt.skill, tt.name, tt.kind, tt.epoch, tt.agent, tt.arm); got != tt.want {
			t.Errorf("ArmJobID(%q, %q, %s, %d, %q, %q) = %s, want %s", tt.skill, tt.name, tt.kind, tt.epoch, tt.agent, tt.arm, got, tt.want)
		}
	}
	if got := JobID("pdf", "extracts-text", KindPrompt, 1, ""); got != "j098f7fc69c371c84e9f3" {
		t.Errorf("JobID = %s, want the with_skill arm's id", got)
	}
}
