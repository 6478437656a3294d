// Package helm holds skillfleet's Helm chart (skillfleet/). Its test, built with the helm tag
// (`make check-helm`, which CI runs), lints the chart, renders it for each values file under
// testdata/ against golden manifests, and checks what must hold in every rendering: only the
// Docker-in-Docker sidecar is privileged, secrets are files and never arguments, every flag
// exists in the daemons it is passed to, and the bundle cache is at the same path for the
// worker and its engine. The chart is rendered and checked here, not deployed to a cluster.
package helm
