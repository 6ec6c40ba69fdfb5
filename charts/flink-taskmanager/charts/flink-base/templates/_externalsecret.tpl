{{/*
The Kafka TLS Secret, synced by the External Secrets Operator from the store
the values name (external-secrets.io/v1). The material never passes through
values or the release; the chart names the Secret, ESO fills it.
*/}}
{{- define "flink-base.externalsecret" -}}
{{- if and .Values.kafka.tls.enabled .Values.kafka.tls.externalSecret.enabled }}
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: {{ include "flink.kafka.tls.secretName" . }}
  labels:
    {{- include "flink.labels" . | nindent 4 }}
spec:
  refreshInterval: {{ .Values.kafka.tls.externalSecret.refreshInterval }}
  secretStoreRef:
    kind: {{ .Values.kafka.tls.externalSecret.store.kind }}
    name: {{ required "kafka.tls.externalSecret.store.name names the SecretStore or ClusterSecretStore holding the Kafka TLS material" .Values.kafka.tls.externalSecret.store.name }}
  target:
    name: {{ include "flink.kafka.tls.secretName" . }}
    creationPolicy: Owner
  data:
    {{- toYaml .Values.kafka.tls.externalSecret.data | nindent 4 }}
{{- end }}
{{- end -}}
