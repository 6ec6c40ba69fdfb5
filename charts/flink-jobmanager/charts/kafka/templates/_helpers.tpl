{{- define "kafka.labels" -}}
app.kubernetes.io/name: kafka
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kafka.headless" -}}
{{- printf "%s-headless" .Values.service.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The image tag is the Kafka version set once in flink-base. */}}
{{- define "kafka.image" -}}
{{- printf "%s:%s" .Values.image.repository (required "kafka.version (flink-base sets it) is the Kafka image tag" .Values.version) -}}
{{- end -}}

{{/* KAFKA_CONTROLLER_QUORUM_VOTERS: <node id>@<pod>.<headless>:9093, node
ids 0..replicas-1 (the pod ordinal). */}}
{{- define "kafka.voters" -}}
{{- $voters := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $voters = append $voters (printf "%d@%s-%d.%s:9093" $i $.Values.service.name $i (include "kafka.headless" $)) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{/* The advertised listener of one broker, from its pod name (POD_NAME). */}}
{{- define "kafka.advertisedListeners" -}}
{{- printf "PLAINTEXT://$(POD_NAME).%s:%v" (include "kafka.headless" .) .Values.service.port -}}
{{- end -}}

{{- define "kafka.listeners" -}}
{{- printf "PLAINTEXT://:%v,CONTROLLER://:9093" .Values.service.port -}}
{{- end -}}

{{/* The KRaft cluster ID (a 22-character base64url UUID): stable per
release, so a rescheduled broker rejoins its cluster. */}}
{{- define "kafka.clusterId" -}}
{{- .Release.Name | sha256sum | trunc 22 -}}
{{- end -}}

{{/* The vendored Kafka serves plaintext only. */}}
{{- define "kafka.plaintextOnly" -}}
{{- if and .Values.tls .Values.tls.enabled -}}
{{- fail "kafka.tls.enabled is for a Kafka of your own (kafka.enabled=false): the vendored kafka chart serves plaintext only" -}}
{{- end -}}
{{- end -}}
