{{- define "type" -}}
{{- $type := . -}}
{{- if markdownShouldRenderType $type }}

### {{ $type.Name }}
{{ if $type.IsAlias }}
_Underlying type:_ {{ markdownRenderType $type.UnderlyingType }}
{{ end }}
{{ $type.Doc }}
{{ if $type.Validation }}
Bounds:
{{- range $type.Validation }}
- {{ markdownRenderFieldDoc . }}
{{- end }}
{{ end }}
{{- with index $type.Markers "kubebuilder:validation:XValidation" }}
Rules (CEL, checked by the API server):
{{- range . }}
- {{ template "rule" . }}
{{- end }}
{{ end }}
{{- if $type.References }}
Used in:
{{- range $type.SortedReferences }} {{ markdownRenderTypeLink . }}{{ end }}
{{ end }}
{{- if $type.Members }}
| Field | Type | Description | Default | Bounds |
| --- | --- | --- | --- | --- |
{{- if $type.GVK }}
| `apiVersion` | string | `{{ $type.GVK.Group }}/{{ $type.GVK.Version }}` | | |
| `kind` | string | `{{ $type.GVK.Kind }}` | | |
{{- end }}
{{- range $type.Members }}
| `{{ .Name }}` | {{ markdownRenderType .Type }} | {{ template "type_members" . }} | {{ markdownRenderDefault .Default }} | {{ range .Validation }}{{ if not (hasPrefix "Optional" .) }}{{ markdownRenderFieldDoc . }}<br />{{ end }}{{ end }} |
{{- end }}
{{ range $type.Members }}
{{- $field := . }}
{{- with index .Markers "kubebuilder:validation:XValidation" }}
Rules on `{{ $field.Name }}`:
{{- range . }}
- {{ template "rule" . }}
{{- end }}
{{ end }}
{{- end }}
{{- end }}
{{- if $type.EnumValues }}
| Value | Description |
| --- | --- |
{{- range $type.EnumValues }}
| `{{ .Name }}` | {{ markdownRenderFieldDoc .Doc }} |
{{- end }}
{{ end }}
{{- end }}
{{- end -}}

{{- define "rule" -}}
{{- if .Message }}{{ .Message }}{{ else if .MessageExpression }}message: `{{ .MessageExpression }}`{{ end }} (rule: `{{ .Rule }}`)
{{- end -}}
