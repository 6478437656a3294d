package agenttest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Greeter is a scripted model that knows a house greeting only from a skill's body: when the
// system prompt lists a skill at a location location matches (its first group the path), it
// reads that file with read_file, and greets "Salutations, NAME!" if the body says so, else
// "Hello, NAME.". The name is the user's "Greet NAME". With the skill listed and mounted a case
// expecting the salutation passes; without it, or with an old body, it fails.
func Greeter(t testing.TB, location *regexp.Regexp) *Server {
	return NewFunc(t, func(_ int, r Request) Reply {
		msgs := r.Messages()
		system := fmt.Sprint(msgs[0]["content"])
		var read, name string
		for _, m := range msgs {
			switch m["role"] {
			case "tool":
				read = fmt.Sprint(m["content"])
			case "user":
				name = strings.TrimPrefix(fmt.Sprint(m["content"]), "Greet ")
			}
		}
		switch loc := location.FindStringSubmatch(system); {
		case loc != nil && read == "":
			return ToolCalls(100, 10, Call{ID: "c1", Name: "read_file", Arguments: `{"path": "` + loc[1] + `"}`})
		case strings.Contains(read, `"Salutations, NAME!"`):
			return Text("Salutations, "+name+"!", 100, 5)
		}
		return Text("Hello, "+name+".", 100, 5)
	})
}
