{{/*
The Flink pods' ServiceAccount, and a Role with what Flink's Kubernetes HA
services do with ConfigMaps (leader election, HA metadata; the verbs are
those Flink's fabric8 client sends), bound to it. The operator checks these
rights with SubjectAccessReviews (condition HighAvailabilityPermissions).
*/}}
{{- define "flink-base.serviceaccount" -}}
{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "flink.serviceAccountName" . }}
  labels:
    {{- include "flink.labels" . | nindent 4 }}
automountServiceAccountToken: true
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "flink.serviceAccountName" . }}
  labels:
    {{- include "flink.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch, create, update, patch, delete, deletecollection]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "flink.serviceAccountName" . }}
  labels:
    {{- include "flink.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "flink.serviceAccountName" . }}
subjects:
  - kind: ServiceAccount
    name: {{ include "flink.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
{{- end }}
{{- end -}}
