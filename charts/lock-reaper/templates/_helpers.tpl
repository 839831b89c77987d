{{/*
Every helper takes the chart's root context (or, from a parent chart that
depends on this one, `index .Subcharts "lock-reaper"`), so that the names it
derives match the objects this chart creates.
*/}}

{{- define "lock-reaper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lock-reaper.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lock-reaper.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lock-reaper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lock-reaper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lock-reaper.labels" -}}
helm.sh/chart: {{ include "lock-reaper.chart" . }}
{{ include "lock-reaper.selectorLabels" . }}
app.kubernetes.io/version: {{ include "lock-reaper.imageTag" . | quote }}
app.kubernetes.io/component: reaper
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "lock-reaper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lock-reaper.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "lock-reaper.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "lock-reaper.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "lock-reaper.imageTag" .) }}
{{- end }}
{{- end }}

{{- define "lock-reaper.secretName" -}}
{{- default (include "lock-reaper.fullname" .) .Values.existingSecret }}
{{- end }}

{{/*
The configuration file. `listen` is owned by the chart: the probes, the
Service and the ServiceMonitor all use metrics.port, so the daemon must listen
there. `lock-reaper once` (cronjob mode) serves no HTTP and gets no `listen`.
*/}}
{{- define "lock-reaper.config" -}}
{{- $config := deepCopy (default dict .Values.config) }}
{{- if ne .Values.mode "cronjob" }}
{{- $_ := set $config "listen" (printf ":%d" (int .Values.metrics.port)) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
Pod annotations: checksums make a change of the configuration, or of the
chart-made Secret, roll the pods.
*/}}
{{- define "lock-reaper.podAnnotations" -}}
checksum/config: {{ include "lock-reaper.config" . | sha256sum }}
{{- if not .Values.existingSecret }}
checksum/secret: {{ printf "%s\n%s" .Values.redisUrl .Values.databaseUrl | sha256sum }}
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "lock-reaper.podLabels" -}}
{{ include "lock-reaper.labels" . }}
{{- with .Values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The "restricted" Pod Security Standard, at pod level for the chart's own pods.
The image runs as the distroless nonroot user, 65532.
*/}}
{{- define "lock-reaper.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
The "restricted" profile again at container level, complete on its own so
that the container is just as locked down inside a Pulp worker pod whose
pod-level securityContext is not ours.
*/}}
{{- define "lock-reaper.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
One projected volume holds the configuration file and the two DSN files.
Mode 0444 (292): the files are read-only, and readable by the reaper whatever
the pod's fsGroup, which a Pulp worker pod decides for a sidecar. Only the
lock-reaper container mounts the volume.
*/}}
{{- define "lock-reaper.volume" -}}
name: lock-reaper
projected:
  defaultMode: 292
  sources:
    - configMap:
        name: {{ include "lock-reaper.fullname" . }}
        items:
          - key: config.yaml
            path: config.yaml
    - secret:
        name: {{ include "lock-reaper.secretName" . }}
        items:
          - key: {{ .Values.secretKeys.redisUrl }}
            path: redis-url
          - key: {{ .Values.secretKeys.databaseUrl }}
            path: database-url
{{- end }}

{{/*
What every lock-reaper container has in common: image, environment, mounts,
resources and securityContext. The DSNs are read from files, never from
environment values, so they show neither in the pod spec nor in the
process environment.
*/}}
{{- define "lock-reaper.containerBase" -}}
image: {{ include "lock-reaper.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
env:
  - name: REAPER_CONFIG
    value: /etc/lock-reaper/config.yaml
  - name: REAPER_REDIS_URL_FILE
    value: /etc/lock-reaper/redis-url
  - name: REAPER_DATABASE_URL_FILE
    value: /etc/lock-reaper/database-url
  {{- if dig "limits" "memory" "" .Values.resources }}
  - name: GOMEMLIMIT
    valueFrom:
      resourceFieldRef:
        resource: limits.memory
  {{- end }}
volumeMounts:
  - name: lock-reaper
    mountPath: /etc/lock-reaper
    readOnly: true
{{- with .Values.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "lock-reaper.containerSecurityContext" . | nindent 2 }}
{{- end }}

{{/*
Pod-level settings shared by the CronJob's and the Deployment's pods.
*/}}
{{- define "lock-reaper.podSpec" -}}
serviceAccountName: {{ include "lock-reaper.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "lock-reaper.podSecurityContext" . | nindent 2 }}
volumes:
  - {{ include "lock-reaper.volume" . | indent 4 | trim }}
{{- end }}

{{/*
lock-reaper.sidecar renders lock-reaper as a native sidecar container (one
entry of a Pulp worker pod's initContainers, Kubernetes 1.29 or later) that
runs the `run` daemon for the life of the pod. Add lock-reaper.sidecarVolume
to the same pod's volumes. See README.md.

It deliberately has no readinessProbe: a native sidecar's readiness is part
of the pod's Ready condition, and the reaper is not ready until its first
successful pass and whenever Redis or PostgreSQL is down. That must never take
a Pulp worker out of service. It has no startupProbe either: the kubelet
starts the worker's containers only after a sidecar's startupProbe succeeds,
so a reaper that cannot start (say, a configuration error) would keep the
worker from starting. The livenessProbe restarts only the sidecar.
*/}}
{{- define "lock-reaper.sidecar" -}}
name: lock-reaper
restartPolicy: Always
args:
  - run
{{ include "lock-reaper.containerBase" . }}
ports:
  - name: reaper-metrics
    containerPort: {{ .Values.metrics.port }}
    protocol: TCP
livenessProbe:
  httpGet:
    path: /livez
    port: reaper-metrics
  initialDelaySeconds: 10
  periodSeconds: 20
  timeoutSeconds: 3
  failureThreshold: 3
{{- end }}

{{/*
lock-reaper.sidecarVolume renders the volume that lock-reaper.sidecar mounts,
for the Pulp worker pod's volumes.
*/}}
{{- define "lock-reaper.sidecarVolume" -}}
{{ include "lock-reaper.volume" . }}
{{- end }}

{{/*
lock-reaper.scheduleSeconds prints the interval of cronjob.schedule in
seconds for the forms whose interval is fixed, and nothing for any other
form: every N minutes where N divides 60 (a step on the minute field, every
other field a star), hourly (one minute, every other field a star, or
@hourly), and @daily or @midnight.
*/}}
{{- define "lock-reaper.scheduleSeconds" -}}
{{- $s := .Values.cronjob.schedule | trim }}
{{- if regexMatch "^\\*/[0-9]+ \\* \\* \\* \\*$" $s }}
{{- $n := regexFind "[0-9]+" $s | int }}
{{- if and (gt $n 0) (eq (mod 60 $n) 0) }}
{{- mul $n 60 }}
{{- end }}
{{- else if or (regexMatch "^[0-9]+ \\* \\* \\* \\*$" $s) (eq $s "@hourly") }}
{{- 3600 }}
{{- else if or (eq $s "@daily") (eq $s "@midnight") }}
{{- 86400 }}
{{- end }}
{{- end }}
