package agent

import (
	"context"
	"errors"
	"net/http"
)

// anthropicProvider is a placeholder until Anthropic's Messages provider lands.
type anthropicProvider struct{}

func newAnthropicProvider(Endpoint, *http.Client) *anthropicProvider { return &anthropicProvider{} }

func (p *anthropicProvider) send(context.Context, Conversation, string) (*Answer, Usage, *http.Response, error) {
	return nil, Usage{}, nil, errors.New("anthropic: not yet")
}
func (p *anthropicProvider) retryable(int, error) bool { return false }
func (p *anthropicProvider) message(error) string      { return "" }
