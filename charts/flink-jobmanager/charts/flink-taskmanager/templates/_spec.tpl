{{/*
spec.taskManager of the FlinkCluster, from this chart's values. Called with
the values of the TaskManager tier, so flink-jobmanager renders it from
.Values.taskmanager.
*/}}
{{- define "flink-taskmanager.spec" -}}
replicas: {{ .replicas }}
slots: {{ .slots }}
spread: {{ .spread }}
{{- with .resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .storage }}
storage:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .podTemplate }}
podTemplate:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
