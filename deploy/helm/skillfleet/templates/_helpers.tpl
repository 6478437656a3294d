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

{{/* The NATS flags both daemons take; secrets are files, never arguments. */}}
{{- define "skillfleet.natsArgs" -}}
{{- if and .Values.nats.token.existingSecret .Values.nats.creds.existingSecret }}
{{- fail "nats: set token.existingSecret or creds.existingSecret, not both" }}
{{- end }}
- --nats={{ .Values.nats.url }}
{{- if .Values.nats.token.existingSecret }}
- --nats-token-file=/etc/skillfleet/nats-token/{{ .Values.nats.token.key }}
{{- end }}
{{- if .Values.nats.creds.existingSecret }}
- --nats-creds=/etc/skillfleet/nats-creds/{{ .Values.nats.creds.key }}
{{- end }}
{{- if .Values.nats.tls.existingSecret }}
- --nats-tls-ca=/etc/skillfleet/nats-tls/ca.crt
{{- if .Values.nats.tls.clientCert }}
- --nats-tls-cert=/etc/skillfleet/nats-tls/tls.crt
- --nats-tls-key=/etc/skillfleet/nats-tls/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{- define "skillfleet.natsMounts" -}}
{{- if .Values.nats.token.existingSecret }}
- {name: nats-token, mountPath: /etc/skillfleet/nats-token, readOnly: true}
{{- end }}
{{- if .Values.nats.creds.existingSecret }}
- {name: nats-creds, mountPath: /etc/skillfleet/nats-creds, readOnly: true}
{{- end }}
{{- if .Values.nats.tls.existingSecret }}
- {name: nats-tls, mountPath: /etc/skillfleet/nats-tls, readOnly: true}
{{- end }}
{{- end -}}

{{- define "skillfleet.natsVolumes" -}}
{{- if .Values.nats.token.existingSecret }}
- name: nats-token
  secret: {secretName: {{ .Values.nats.token.existingSecret }}}
{{- end }}
{{- if .Values.nats.creds.existingSecret }}
- name: nats-creds
  secret: {secretName: {{ .Values.nats.creds.existingSecret }}}
{{- end }}
{{- if .Values.nats.tls.existingSecret }}
- name: nats-tls
  secret: {secretName: {{ .Values.nats.tls.existingSecret }}}
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
