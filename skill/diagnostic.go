package skill

import "github.com/skillfleet/skillfleet/internal/text"

// maxQuoted bounds user-controlled text quoted in a message, so that a hostile 60 KB key
// yields a readable diagnostic.
const maxQuoted = 80

// clip shortens s to maxQuoted characters for quoting in a message.
func clip(s string) string { return text.ClipRunes(s, maxQuoted) }
