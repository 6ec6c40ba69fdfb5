{{- define "zookeeper.labels" -}}
app.kubernetes.io/name: zookeeper
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "zookeeper.headless" -}}
{{- printf "%s-headless" .Values.service.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "zookeeper.image" -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}

{{/* ZOO_SERVERS of the official image: server.<id>=<pod>.<headless>:2888:3888;<client port>,
ids 1..replicas (pod ordinal + 1). */}}
{{- define "zookeeper.servers" -}}
{{- $servers := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $servers = append $servers (printf "server.%d=%s-%d.%s:2888:3888;%v" (add1 $i) $.Values.service.name $i (include "zookeeper.headless" $) $.Values.service.port) -}}
{{- end -}}
{{- join " " $servers -}}
{{- end -}}
