// Package monitoring checks skillfleet's Grafana dashboard and Prometheus alerting rules, which
// the Helm chart ships (deploy/helm/skillfleet/files: dashboard.json, alerts.yaml): every query
// and rule must read metrics and labels the code registers, and every metric must have a panel.
package monitoring
