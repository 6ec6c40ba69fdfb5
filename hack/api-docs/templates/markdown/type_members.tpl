{{- define "type_members" -}}
{{- if eq .Name "metadata" -}}
Kubernetes object metadata: `kubectl explain flinkcluster.metadata`.
{{- else -}}
{{ markdownRenderFieldDoc .Doc }}
{{- end -}}
{{- end -}}
