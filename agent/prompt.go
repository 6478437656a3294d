package agent

import "strings"

// skillInstructions are the spec's behavioural instructions for file-read activation
// (agentskills.io, "Adding skills support", step 3), naming our read tool.
const skillInstructions = `The following skills provide specialized instructions for specific tasks.
When a task matches a skill's description, use the read_file tool to load
the SKILL.md at the listed location before proceeding.
When a skill references relative paths, resolve them against the skill's
directory (the parent of SKILL.md) and use absolute paths in tool calls.`

var xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// systemPrompt is the agent's system message: a short statement of its situation, then, when
// the suite has skills, the spec's instructions and the <available_skills> catalog. With no
// skills both are left out, as the spec says, rather than showing an empty catalog.
func systemPrompt(catalog []SkillRef, tools []string, workdir string) string {
	var b strings.Builder
	b.WriteString("You are an agent working in a sandboxed Linux environment")
	if workdir != "" {
		b.WriteString(" (working directory ")
		b.WriteString(workdir)
		b.WriteString(")")
	}
	b.WriteString(".")
	if len(tools) > 0 {
		b.WriteString(" Use the tools (")
		b.WriteString(strings.Join(tools, ", "))
		b.WriteString(") when the task needs them.")
	}
	b.WriteString(" When you are done, reply with your final answer as a message without tool calls; that message is your answer.")
	if len(catalog) == 0 {
		return b.String()
	}
	b.WriteString("\n\n")
	b.WriteString(skillInstructions)
	b.WriteString("\n\n<available_skills>\n")
	for _, s := range catalog {
		b.WriteString("  <skill>\n    <name>")
		b.WriteString(xmlText.Replace(s.Name))
		b.WriteString("</name>\n    <description>")
		b.WriteString(xmlText.Replace(s.Description))
		b.WriteString("</description>\n    <location>")
		b.WriteString(xmlText.Replace(s.Location))
		b.WriteString("</location>\n  </skill>\n")
	}
	b.WriteString("</available_skills>")
	return b.String()
}
