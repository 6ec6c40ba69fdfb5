{{/*
Named helpers shared by the Flink charts. Every string a template needs
assembled is assembled here, so templates only switch features with if.
*/}}

{{/* The FlinkCluster's name: the release's, short enough that the operator's
<name>-taskmanager-<ordinal> pod names stay within 63 characters. */}}
{{- define "flink.clusterName" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* The Secret holding the Kafka TLS material: release-scoped, at most 63
characters (the reference design's helper). */}}
{{- define "flink.kafka.tls.secretName" -}}
{{- printf "%s-kafka-tls" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Kafka bootstrap servers, from the Service's name and port. */}}
{{- define "flink.kafka.bootstrapServers" -}}
{{- printf "%s:%v" .Values.kafka.service.name .Values.kafka.service.port -}}
{{- end -}}

{{/* The ZooKeeper connect string, from the Service's name and port. */}}
{{- define "flink.zookeeper.connectString" -}}
{{- printf "%s:%v" .Values.zookeeper.service.name .Values.zookeeper.service.port -}}
{{- end -}}

{{/* The Flink image. */}}
{{- define "flink.image" -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}

{{/* The ServiceAccount the Flink pods run as. */}}
{{- define "flink.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (printf "%s-flink" (include "flink.clusterName" .)) .Values.serviceAccount.name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object the Flink charts render. The operator's own
app.kubernetes.io/ labels stay on the objects it builds. */}}
{{- define "flink.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/part-of: {{ include "flink.clusterName" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selects the pods of one component of the cluster, as the operator labels
them. Called with (list $ "jobmanager"). */}}
{{- define "flink.selectorLabels" -}}
app.kubernetes.io/name: flink
app.kubernetes.io/instance: {{ include "flink.clusterName" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The Secret holding the Kafka SASL JAAS settings: release-scoped, at
most 63 characters. */}}
{{- define "flink.kafka.sasl.secretName" -}}
{{- printf "%s-kafka-sasl" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
