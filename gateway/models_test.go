package gateway

import (
	"context"
	"errors"
	"net/http"
	"testing"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"
)

// GET /v1/models is answered in the configured protocol's own shape, with the configured model
// alone, as each protocol's official SDK reads it (OpenAI's model list, Anthropic's Models API,
// Gemini's models.list and models.get): a CLI that lists or checks its model at start gets an
// answer it understands, never another protocol's 404. Another model is a 404 in the same
// shape.
func TestModelsInEachProtocolsShape(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		api string
		// list lists the models and gets the configured one and another, through the SDK.
		list func(t *testing.T, f gatewayFixture, s *Session) (ids []string, got string, otherStatus int)
	}{
		{APIOpenAI, func(t *testing.T, f gatewayFixture, s *Session) ([]string, string, int) {
			c := openai.NewClient(oaoption.WithBaseURL("http://gateway/v1/"), oaoption.WithAPIKey(s.Token()),
				oaoption.WithHTTPClient(f.client), oaoption.WithMaxRetries(0))
			page, err := c.Models.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range page.Data {
				ids = append(ids, m.ID)
			}
			m, err := c.Models.Get(ctx, "gw-model")
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Models.Get(ctx, "gpt-other")
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("another model: %v, not an API error", err)
			}
			return ids, m.ID, apiErr.StatusCode
		}},
		{APIAnthropic, func(t *testing.T, f gatewayFixture, s *Session) ([]string, string, int) {
			c := sdkClient(f, s)
			page, err := c.Models.List(ctx, asdk.ModelListParams{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range page.Data {
				if m.Type != "model" {
					t.Errorf("a model of type %q", m.Type)
				}
				ids = append(ids, m.ID)
			}
			if page.HasMore {
				t.Error("the list says it has more")
			}
			m, err := c.Models.Get(ctx, "gw-model", asdk.ModelGetParams{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Models.Get(ctx, "claude-other", asdk.ModelGetParams{})
			var apiErr *asdk.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("another model: %v, not an API error", err)
			}
			return ids, m.ID, apiErr.StatusCode
		}},
		{APIGemini, func(t *testing.T, f gatewayFixture, s *Session) ([]string, string, int) {
			c, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendGeminiAPI, APIKey: s.Token(),
				HTTPClient: f.client, HTTPOptions: genai.HTTPOptions{BaseURL: "http://gateway/"}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for m, err := range c.Models.All(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m.Name)
			}
			m, err := c.Models.Get(ctx, "gw-model", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Models.Get(ctx, "gemini-other", nil)
			var apiErr genai.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("another model: %v, not an API error", err)
			}
			if apiErr.Status != "NOT_FOUND" {
				t.Errorf("another model: status %q, want NOT_FOUND", apiErr.Status)
			}
			return ids, m.Name, apiErr.Code
		}},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			f := serveGateway(t, "http://127.0.0.1:1", func(c *Config) { c.API = tt.api })
			s, err := f.g.Open("job", Budget{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "gw-model"
			if tt.api == APIGemini {
				want = "models/gw-model"
			}
			ids, got, other := tt.list(t, f, s)
			if len(ids) != 1 || ids[0] != want || got != want {
				t.Errorf("listed %q, got %q; want %q alone", ids, got, want)
			}
			if other != http.StatusNotFound {
				t.Errorf("another model: status %d, want 404", other)
			}
			if s.Requests() != 0 || s.Usage().Total() != 0 {
				t.Errorf("listing models was metered: %d requests, %+v", s.Requests(), s.Usage())
			}
		})
	}
}
