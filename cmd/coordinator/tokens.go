package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/cmdutil"
	"github.com/skillfleet/skillfleet/internal/tenant"
)

// apiTokens resolves the API's tokens from --token (flagSet: it was given), else --token-file
// (several tokens, see coordinator.ParseTokens), else $envVar. An empty one is a usage error
// naming where it came from: it would otherwise leave the API without authentication.
// None at all is no error: the API then serves loopback callers only.
func apiTokens(flag string, flagSet bool, file, envVar string) ([]coordinator.Token, error) {
	if flagSet && file != "" {
		return nil, cmdutil.Usage(errors.New("set the token with --token or --token-file, not both"))
	}
	switch {
	case flagSet:
		if flag == "" {
			return nil, cmdutil.Usage(errors.New("--token is empty: give a token, or leave the flag out"))
		}
		return []coordinator.Token{{Name: "default", Secret: flag}}, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, cmdutil.Usage(fmt.Errorf("--token-file: %w", err))
		}
		toks, err := coordinator.ParseTokens(string(b), "--token-file "+file)
		if err != nil {
			return nil, cmdutil.Usage(err)
		}
		return toks, nil
	}
	v, set := os.LookupEnv(envVar)
	if !set {
		return nil, nil
	}
	if v == "" {
		return nil, cmdutil.Usage(fmt.Errorf("$%s is set but empty: give a token, or unset it", envVar))
	}
	return []coordinator.Token{{Name: "default", Secret: v}}, nil
}

// viewerTokens reads --viewer-token-file (none when file is ""), in the token file's format.
func viewerTokens(file string) ([]coordinator.Token, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, cmdutil.Usage(fmt.Errorf("--viewer-token-file: %w", err))
	}
	toks, err := coordinator.ParseTokens(string(b), "--viewer-token-file "+file)
	if err != nil {
		return nil, cmdutil.Usage(err)
	}
	for i := range toks {
		// A line that asks for more than reading is a mistake to say, not to grant.
		if r := toks[i].Role; r != 0 && r != tenant.Viewer {
			return nil, cmdutil.Usage(fmt.Errorf("--viewer-token-file %s: token %q asks for role=%s: its tokens are viewers' (give it a line in --token-file instead)", file, toks[i].Name, r))
		}
		toks[i].Role = tenant.Viewer
	}
	return toks, nil
}
