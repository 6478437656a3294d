{{- define "skillfleet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "skillfleet.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "skillfleet.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "skillfleet.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- end -}}

{{- define "skillfleet.apiTokenSecret" -}}
{{- .Values.coordinator.apiToken.existingSecret | default (printf "%s-api-token" (include "skillfleet.fullname" .)) -}}
{{- end -}}

{{/* The NATS flags a daemon takes; secrets are files, never arguments. Called with
(dict "root" $ "role" "coordinator"|"worker"): a role's own creds replace the shared token or
creds, so NATS permissions can give each role only what it needs. */}}
{{- define "skillfleet.natsArgs" -}}
{{- $n := .root.Values.nats }}
{{- $r := index $n.roles .role }}
{{- if and $n.token.existingSecret $n.creds.existingSecret }}
{{- fail "nats: set token.existingSecret or creds.existingSecret, not both" }}
{{- end }}
- --nats={{ $n.url }}
{{- if $r.credsSecret }}
- --nats-creds=/etc/skillfleet/nats-role-creds/{{ $n.creds.key }}
{{- else if $n.token.existingSecret }}
- --nats-token-file=/etc/skillfleet/nats-token/{{ $n.token.key }}
{{- else if $n.creds.existingSecret }}
- --nats-creds=/etc/skillfleet/nats-creds/{{ $n.creds.key }}
{{- end }}
{{- with $r.inboxPrefix }}
- --nats-inbox-prefix={{ . }}
{{- end }}
{{- if $n.tls.existingSecret }}
- --nats-tls-ca=/etc/skillfleet/nats-tls/ca.crt
{{- if $n.tls.clientCert }}
- --nats-tls-cert=/etc/skillfleet/nats-tls/tls.crt
- --nats-tls-key=/etc/skillfleet/nats-tls/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{- define "skillfleet.natsMounts" -}}
{{- $n := .root.Values.nats }}
{{- $r := index $n.roles .role }}
{{- if $r.credsSecret }}
- {name: nats-role-creds, mountPath: /etc/skillfleet/nats-role-creds, readOnly: true}
{{- else if $n.token.existingSecret }}
- {name: nats-token, mountPath: /etc/skillfleet/nats-token, readOnly: true}
{{- else if $n.creds.existingSecret }}
- {name: nats-creds, mountPath: /etc/skillfleet/nats-creds, readOnly: true}
{{- end }}
{{- if $n.tls.existingSecret }}
- {name: nats-tls, mountPath: /etc/skillfleet/nats-tls, readOnly: true}
{{- end }}
{{- end -}}

{{- define "skillfleet.natsVolumes" -}}
{{- $n := .root.Values.nats }}
{{- $r := index $n.roles .role }}
{{- if $r.credsSecret }}
- name: nats-role-creds
  secret: {secretName: {{ $r.credsSecret }}}
{{- else if $n.token.existingSecret }}
- name: nats-token
  secret: {secretName: {{ $n.token.existingSecret }}}
{{- else if $n.creds.existingSecret }}
- name: nats-creds
  secret: {secretName: {{ $n.creds.existingSecret }}}
{{- end }}
{{- if $n.tls.existingSecret }}
- name: nats-tls
  secret: {secretName: {{ $n.tls.existingSecret }}}
{{- end }}
{{- end -}}

{{/* Non-root, nothing to escalate to, a read-only root: what both daemons run with. */}}
{{- define "skillfleet.securityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* The Secret holding the history database's password. */}}
{{- define "skillfleet.historySecret" -}}
{{- .Values.coordinator.history.existingSecret | default (printf "%s-history" (include "skillfleet.fullname" .)) -}}
{{- end -}}
