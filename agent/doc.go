// Package agent holds the agents that answer prompt cases and the model client they share with
// the judge.
//
// The model client (Client) talks to one OpenAI-compatible Chat Completions endpoint: bounded,
// observable retries honouring Retry-After, an adaptive (AIMD) concurrency limit per endpoint,
// token usage and cost from the configured price table, and Prometheus metrics with bounded
// labels. The built-in agent (BuiltIn) runs its model loop in the worker and executes every tool
// call inside the job's sandbox, so no credential ever enters the sandbox.
package agent
