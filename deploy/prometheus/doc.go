// Package prometheus holds skillfleet's Prometheus alerting rules (alerts.yaml); its test
// checks every expression against the metrics and labels the code registers.
package prometheus
