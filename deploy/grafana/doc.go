// Package grafana holds skillfleet's Grafana dashboard (skillfleet.json): pass rates, fleet
// load, sandboxes and model traffic, from the coordinator's and workers' /metrics. Its test keeps
// every query in step with the metrics and labels the code registers.
package grafana
