package agent

import (
	"context"
	"errors"
	"net/http"
)

// geminiProvider is a placeholder until Gemini's provider lands.
type geminiProvider struct{}

func newGeminiProvider(Endpoint, *http.Client) (*geminiProvider, error) {
	return &geminiProvider{}, nil
}

func (p *geminiProvider) send(context.Context, Conversation, string) (*Answer, Usage, *http.Response, error) {
	return nil, Usage{}, nil, errors.New("gemini: not yet")
}
func (p *geminiProvider) retryable(int, error) bool { return false }
func (p *geminiProvider) message(error) string      { return "" }
