{{/* The release's full name: object names are <fullname>-scheduler and <fullname>-controller. */}}
{{- define "joinery.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "joinery.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "joinery.scheduler" -}}{{ include "joinery.fullname" . }}-scheduler{{- end -}}
{{- define "joinery.controller" -}}{{ include "joinery.fullname" . }}-controller{{- end -}}

{{- define "joinery.schedulerServiceAccount" -}}
{{- if .Values.serviceAccount.create -}}{{ include "joinery.scheduler" . }}{{- else -}}{{ required "serviceAccount.schedulerName is required when serviceAccount.create is false" .Values.serviceAccount.schedulerName }}{{- end -}}
{{- end -}}
{{- define "joinery.controllerServiceAccount" -}}
{{- if .Values.serviceAccount.create -}}{{ include "joinery.controller" . }}{{- else -}}{{ required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "joinery.labels" -}}
app.kubernetes.io/part-of: {{ include "joinery.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* metadata.annotations of every object, when there are any. */}}
{{- define "joinery.annotations" -}}
{{- with .Values.additionalAnnotations -}}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{/* The selector labels of one binary's pods; the argument is (list $ "scheduler"). */}}
{{- define "joinery.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ include "joinery.name" $ }}-{{ index . 1 }}
app.kubernetes.io/instance: {{ $.Release.Name }}
{{- end -}}

{{/* An image reference: the digest wins over the tag; the tag defaults to appVersion. */}}
{{- define "joinery.image" -}}
{{- $image := index . 0 -}}{{- $ := index . 1 -}}
{{- if $image.digest -}}
{{ $image.repository }}@{{ $image.digest }}
{{- else -}}
{{ $image.repository }}:{{ default $.Chart.AppVersion $image.tag }}
{{- end -}}
{{- end -}}

{{/* FEATURE_GATES from settings.featureGates, in Karpenter's Name=bool form. */}}
{{- define "joinery.featureGates" -}}
{{- $gates := list -}}
{{- range $name, $on := .Values.settings.featureGates -}}
{{- $gates = append $gates (printf "%s%s=%t" (upper (substr 0 1 $name)) (substr 1 -1 $name) $on) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{/* The pod spec parts both Deployments share; the argument is (list $ "scheduler"). */}}
{{- define "joinery.podPlacement" -}}
{{- $ := index . 0 -}}{{- $component := index . 1 -}}
{{- $selector := dict "matchLabels" (include "joinery.selectorLabels" . | fromYaml) -}}
{{- with $.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.affinity }}
{{- $affinity := deepCopy . }}
{{- with $affinity.podAntiAffinity }}
{{- range .requiredDuringSchedulingIgnoredDuringExecution }}
{{- if not .labelSelector }}{{ $_ := set . "labelSelector" $selector }}{{ end }}
{{- end }}
{{- range .preferredDuringSchedulingIgnoredDuringExecution }}
{{- if not .podAffinityTerm.labelSelector }}{{ $_ := set .podAffinityTerm "labelSelector" $selector }}{{ end }}
{{- end }}
{{- end }}
affinity:
  {{- toYaml $affinity | nindent 2 }}
{{- end }}
{{- with $.Values.topologySpreadConstraints }}
topologySpreadConstraints:
{{- range . }}
{{- $c := deepCopy . }}
{{- if not $c.labelSelector }}{{ $_ := set $c "labelSelector" $selector }}{{ end }}
- {{ toYaml $c | nindent 2 | trim }}
{{- end }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end -}}

{{/* The container security context of both binaries (restricted Pod Security Standard). */}}
{{- define "joinery.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}
