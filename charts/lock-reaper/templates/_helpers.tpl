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
{{- else if and (dig "pushgateway_url" "" $config) (not (dig "pushgateway_grouping" "" $config)) }}
{{- $_ := set $config "pushgateway_grouping" (include "lock-reaper.pushGrouping" .) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
lock-reaper.pushGrouping: the grouping labels of the CronJob's pushes, so
that each release's passes push to a group of their own and every pushed
series names the release's namespace (a Pushgateway scraped with
honor_labels keeps it) and instance, which the alert rules and the
dashboard select.
*/}}
{{- define "lock-reaper.pushGrouping" -}}
{{- printf "namespace=%s,instance=%s" .Release.Namespace (include "lock-reaper.fullname" .) }}
{{- end }}

{{/*
lock-reaper.ruleScope: the values the rule files' placeholders take, as
JSON: the namespace, the Pushgateway group's instance (the CronJob's) and
the job label of the scraped series (deployment, sidecar). A
config.pushgateway_grouping of the user's gives the namespace and instance
its pushes carry.
*/}}
{{- define "lock-reaper.ruleScope" -}}
{{- $fullname := include "lock-reaper.fullname" . }}
{{- $job := .Values.prometheusRule.job }}
{{- if not $job }}
{{- $job = ternary (printf "%s/%s" .Release.Namespace $fullname) $fullname (eq .Values.mode "sidecar") }}
{{- end }}
{{- $instance := $fullname }}
{{- $namespace := .Release.Namespace }}
{{- with dig "pushgateway_grouping" "" (default dict .Values.config) }}
{{- /* The user's grouping: its namespace and instance, and an instance it
lacks is matched as absent (instance=""). */}}
{{- $instance = "" }}
{{- range splitList "," . }}
{{- $pair := splitList "=" (trim .) }}
{{- if eq (trim (first $pair)) "instance" }}
{{- $instance = trim (last $pair) }}
{{- else if eq (trim (first $pair)) "namespace" }}
{{- $namespace = trim (last $pair) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson (dict "namespace" $namespace "instance" $instance "job" $job) }}
{{- end }}

{{/*
Pod annotations: checksums make a change of the configuration, or of the
chart-made Secret, roll the Deployment's pods, so a rotated DSN given to
the chart reaches the daemon at once (a CronJob reads it at its next Job
anyway). A Secret the chart does not manage (existingSecret, pulp.cr's) has
no checksum here: after rotating it, restart the Deployment.
*/}}
{{- define "lock-reaper.podAnnotations" -}}
checksum/config: {{ include "lock-reaper.config" . | sha256sum }}
{{- if not (or .Values.existingSecret .Values.pulp.cr) }}
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
lock-reaper.pulpMode tells whether the connection settings come from a
pulp-operator Pulp CR's own Secrets and Service (pulp.cr set): "true" or "".
*/}}
{{- define "lock-reaper.pulpMode" -}}
{{- if .Values.pulp.cr }}true{{ end }}
{{- end }}

{{/*
lock-reaper.validate fails the rendering on values that contradict each
other. Every template that renders a workload or its configuration includes
it, so that `helm template` and `helm install` stop with the same message.
*/}}
{{- define "lock-reaper.validate" -}}
{{- $pulp := .Values.pulp }}
{{- if $pulp.cr }}
{{- if or .Values.existingSecret .Values.redisUrl .Values.databaseUrl }}
{{- fail "pulp.cr takes the connection settings from the Pulp CR's own Secrets and Service: leave existingSecret, redisUrl and databaseUrl empty (or unset pulp.cr)" }}
{{- end }}
{{- if eq .Values.mode "sidecar" }}
{{- fail "pulp.cr with mode: sidecar: pulp-operator reconciles its worker Deployments and removes any container it did not add; use mode: cronjob or mode: deployment" }}
{{- end }}
{{- else if or $pulp.database.secret $pulp.database.externalSecret $pulp.cache.externalSecret }}
{{- fail "pulp.database.secret, pulp.database.externalSecret and pulp.cache.externalSecret need pulp.cr, the name of the Pulp CR" }}
{{- end }}
{{- if and $pulp.database.secret $pulp.database.externalSecret }}
{{- fail "set pulp.database.secret (a Secret shaped like <cr>-postgres-configuration) or pulp.database.externalSecret (the CR's spec.database.external_db_secret), not both" }}
{{- end }}
{{- if eq .Values.mode "sidecar" }}
{{- include "lock-reaper.requireNativeSidecars" . }}
{{- if .Values.kubernetes.enabled }}
{{- fail "kubernetes.enabled with mode: sidecar: the sidecar runs under the Pulp worker pod's service account, which this chart does not manage; grant it list and watch on pods yourself and set REAPER_KUBERNETES_ENABLED in extraEnv" }}
{{- end }}
{{- end }}
{{- if and .Values.prometheusRule.enabled (eq .Values.mode "cronjob") (not (dig "pushgateway_url" "" (default dict .Values.config))) }}
{{- fail "prometheusRule.enabled with mode: cronjob needs config.pushgateway_url: a CronJob's passes serve no /metrics, so without a push its alerts see nothing and LockReaperMetricsAbsent fires forever. Set config.pushgateway_url (a Pushgateway scraped with honor_labels: true), or use mode: deployment with serviceMonitor.enabled" }}
{{- end }}
{{- if and .Values.podMonitor.enabled (ne .Values.mode "sidecar") }}
{{- fail "podMonitor.enabled needs mode: sidecar; with mode: deployment use serviceMonitor.enabled" }}
{{- end }}
{{- if .Values.networkPolicy.enabled }}
{{- if ne .Values.mode "deployment" }}
{{- /* A CronJob's pod listens on nothing, and a sidecar's pod is Pulp's
worker pod: a policy selecting it would cut off every other port of it. */}}
{{- fail "networkPolicy.enabled needs mode: deployment: a CronJob serves nothing, and in sidecar mode the page is in Pulp's worker pods, whose ingress is Pulp's to restrict" }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.networkPolicy.from) }}
{{- fail "networkPolicy.enabled with serviceMonitor.enabled and an empty networkPolicy.from: Prometheus could not scrape /metrics. Add its pods to networkPolicy.from (e.g. a namespaceSelector of its namespace with a podSelector of its pods)" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
lock-reaper.requireNativeSidecars fails below Kubernetes 1.29, the first
release with native sidecars (an init container with restartPolicy: Always)
enabled by default. An older API server would drop the restartPolicy and
run the reaper as an ordinary init container that never ends, so the Pulp
worker would never start.
*/}}
{{- define "lock-reaper.requireNativeSidecars" -}}
{{- if semverCompare "<1.29.0-0" .Capabilities.KubeVersion.Version }}
{{- fail (printf "mode: sidecar needs native sidecars, Kubernetes 1.29 or later; this cluster is %s. Use mode: cronjob or mode: deployment (with helm template, pass --kube-version)" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- end }}

{{/*
lock-reaper.kubernetesNamespace is the namespace whose pods lock-reaper reads
when kubernetes.enabled: kubernetes.namespace, else the release's.
*/}}
{{- define "lock-reaper.kubernetesNamespace" -}}
{{- default .Release.Namespace .Values.kubernetes.namespace }}
{{- end }}

{{/*
lock-reaper.kubernetesEnabled tells whether the reaper reads the Pulp pods
as evidence of liveness: "true" or "". kubernetes.enabled decides when set;
left empty (null, the default) it is on with pulp.cr, whose pods carry the
labels the selector needs, and off otherwise.
*/}}
{{- define "lock-reaper.kubernetesEnabled" -}}
{{- $enabled := .Values.kubernetes.enabled }}
{{- if kindIs "invalid" $enabled }}
{{- $enabled = and (ne .Values.mode "sidecar") (not (empty .Values.pulp.cr)) }}
{{- end }}
{{- if $enabled }}true{{ end }}
{{- end }}

{{/*
lock-reaper.kubernetesSelector is the label selector of the Pulp pods:
kubernetes.selector when set; with pulp.cr, the program's default
(kube.DefaultSelector: pulp-operator's worker and API pods) narrowed to
that CR's pods by the pulp_cr label pulp-operator puts on every pod it
makes (controllers/settings/labels.go CommonLabels), so that two CRs in
one namespace are not mixed; else empty, the program's default.
*/}}
{{- define "lock-reaper.kubernetesSelector" -}}
{{- if .Values.kubernetes.selector }}
{{- .Values.kubernetes.selector }}
{{- else if .Values.pulp.cr }}
{{- printf "app.kubernetes.io/managed-by=pulp-operator,app.kubernetes.io/component in (worker,api),pulp_cr=%s" .Values.pulp.cr }}
{{- end }}
{{- end }}

{{/*
The pod-level securityContext: podSecurityContext, by default the
"restricted" Pod Security Standard as the image's distroless nonroot user
65532. OpenShift's restricted SCC assigns a UID of its own: set
podSecurityContext.runAsUser, runAsGroup and fsGroup (and the same in
securityContext) to null there.
*/}}
{{- define "lock-reaper.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext }}
{{- end }}

{{/*
The container-level securityContext, complete on its own so that the
container is just as locked down inside a Pulp worker pod whose pod-level
securityContext is not ours.
*/}}
{{- define "lock-reaper.containerSecurityContext" -}}
{{- toYaml .Values.securityContext }}
{{- end }}

{{/*
lock-reaper.secretFiles lists the files that the Secrets give the reaper, as
a list of dicts: the Secret, its key, the path under /etc/lock-reaper, and
the REAPER_* variable whose _FILE form names it.

- URL form: REAPER_REDIS_URL_FILE and REAPER_DATABASE_URL_FILE from
  existingSecret or the chart-made Secret.
- pulp.cr: the discrete settings (REAPER_DATABASE_HOST_FILE, ...) straight
  from pulp-operator's own Secrets, never copied. Their names and keys are
  those pulp-operator writes and reads (github.com/pulp/pulp-operator):
  - managed database: Secret "<cr>-postgres-configuration"
    (controllers/settings/secrets.go DefaultDBSecret), keys host, port,
    database, username, password, sslmode
    (controllers/repo_manager/database.go databaseConfigSecret);
  - external database: the Secret named by spec.database.external_db_secret
    (apis/repo-manager.pulpproject.org/v1/pulp_types.go Database), keys
    POSTGRES_HOST, POSTGRES_PORT, POSTGRES_USERNAME, POSTGRES_PASSWORD,
    POSTGRES_DB_NAME, POSTGRES_SSLMODE, all required by the operator
    (controllers/repo_manager/secret.go databaseSettings);
  - external cache: the Secret named by spec.cache.external_cache_secret
    (pulp_types.go Cache), keys REDIS_HOST, REDIS_PORT, REDIS_PASSWORD,
    REDIS_DB, all required by the operator (secret.go cacheSettings).
  The managed Redis has no Secret: see lock-reaper.redisServiceEnv.
*/}}
{{- define "lock-reaper.secretFiles" -}}
{{- $files := list }}
{{- $pulp := .Values.pulp }}
{{- $userSet := include "lock-reaper.userSettings" . | fromJson }}
{{- if $pulp.cr }}
{{- if $pulp.database.externalSecret }}
{{- range $setting, $key := dict "HOST" "POSTGRES_HOST" "PORT" "POSTGRES_PORT" "NAME" "POSTGRES_DB_NAME" "USER" "POSTGRES_USERNAME" "PASSWORD" "POSTGRES_PASSWORD" "SSLMODE" "POSTGRES_SSLMODE" }}
{{- $files = append $files (dict "secret" $pulp.database.externalSecret "key" $key "path" (printf "database/%s" (lower $setting)) "env" (printf "REAPER_DATABASE_%s" $setting)) }}
{{- end }}
{{- else }}
{{- $secret := default (printf "%s-postgres-configuration" $pulp.cr) $pulp.database.secret }}
{{- range $setting, $key := dict "HOST" "host" "PORT" "port" "NAME" "database" "USER" "username" "PASSWORD" "password" "SSLMODE" "sslmode" }}
{{- $files = append $files (dict "secret" $secret "key" $key "path" (printf "database/%s" (lower $setting)) "env" (printf "REAPER_DATABASE_%s" $setting)) }}
{{- end }}
{{- end }}
{{- $cacheSecret := $pulp.cache.externalSecret }}
{{- if $cacheSecret }}
{{- range $setting, $key := dict "HOST" "REDIS_HOST" "PORT" "REDIS_PORT" "PASSWORD" "REDIS_PASSWORD" "DB" "REDIS_DB" }}
{{- $files = append $files (dict "secret" $cacheSecret "key" $key "path" (printf "redis/%s" (lower $setting)) "env" (printf "REAPER_REDIS_%s" $setting)) }}
{{- end }}
{{- end }}
{{- else }}
{{- $secret := include "lock-reaper.secretName" . }}
{{- $files = append $files (dict "secret" $secret "key" .Values.secretKeys.redisUrl "path" "redis-url" "env" "REAPER_REDIS_URL") }}
{{- $files = append $files (dict "secret" $secret "key" .Values.secretKeys.databaseUrl "path" "database-url" "env" "REAPER_DATABASE_URL") }}
{{- end }}
{{- $kept := list }}
{{- range $files }}
{{- if not (hasKey $userSet .env) }}
{{- $kept = append $kept . }}
{{- end }}
{{- end }}
{{- toJson $kept }}
{{- end }}

{{/*
lock-reaper.userSettings: the REAPER_* settings the user wrote, as a JSON
object whose keys are the settings' names (without _FILE): every name of
extraEnv (NAME or NAME_FILE) and database.sslmode of config, the one
connection setting the configuration file may hold. A setting the user
wrote wins over the one a Secret or the chart would give: the chart then
mounts no file for it and sets no value. Otherwise the Secret's file
(REAPER_DATABASE_SSLMODE_FILE from pulp-operator's Secret) would beat the
configuration file, and beside an extraEnv of the same setting the
reaper would stop on "both set".
*/}}
{{- define "lock-reaper.userSettings" -}}
{{- $set := dict }}
{{- range .Values.extraEnv }}
{{- if .name }}
{{- $_ := set $set (trimSuffix "_FILE" .name) true }}
{{- end }}
{{- end }}
{{- if dig "database" "sslmode" "" (default dict .Values.config) }}
{{- $_ := set $set "REAPER_DATABASE_SSLMODE" true }}
{{- end }}
{{- toJson $set }}
{{- end }}

{{/*
lock-reaper.redisServiceEnv: with pulp.cr and the operator's own Redis (no
pulp.cache.externalSecret), Redis is the Service "<cr>-redis-svc" in the
CR's namespace on spec.cache.redis_port (default 6379), without a password
and on database 0, exactly as the operator hands it to Pulp
(controllers/settings/services.go CacheService; controllers/deployment.go
REDIS_SERVICE_HOST; controllers/repo_manager/redis.go redisSvc). Neither is
a secret, so they are plain values.
*/}}
{{- define "lock-reaper.redisServiceEnv" -}}
{{- if and .Values.pulp.cr (not .Values.pulp.cache.externalSecret) }}
{{- $userSet := include "lock-reaper.userSettings" . | fromJson }}
{{- if not (hasKey $userSet "REAPER_REDIS_HOST") }}
- name: REAPER_REDIS_HOST
  value: {{ printf "%s-redis-svc.%s" .Values.pulp.cr .Release.Namespace | quote }}
{{- end }}
{{- if not (hasKey $userSet "REAPER_REDIS_PORT") }}
- name: REAPER_REDIS_PORT
  value: {{ .Values.pulp.cache.redisPort | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
One projected volume holds the configuration file and the connection
settings read from Secrets. Mode 0444 (292): the files are read-only, and
readable by the reaper whatever the pod's fsGroup, which a Pulp worker pod
decides for a sidecar. Only the lock-reaper container mounts the volume.
*/}}
{{- define "lock-reaper.volume" -}}
{{- $bySecret := dict }}
{{- $order := list }}
{{- range include "lock-reaper.secretFiles" . | fromJsonArray }}
{{- if not (hasKey $bySecret .secret) }}
{{- $order = append $order .secret }}
{{- $_ := set $bySecret .secret list }}
{{- end }}
{{- $_ := set $bySecret .secret (append (get $bySecret .secret) .) }}
{{- end -}}
name: lock-reaper
projected:
  defaultMode: 292
  sources:
    - configMap:
        name: {{ include "lock-reaper.fullname" . }}
        items:
          - key: config.yaml
            path: config.yaml
    {{- range $order }}
    - secret:
        name: {{ . }}
        items:
          {{- range get $bySecret . }}
          - key: {{ .key }}
            path: {{ .path }}
          {{- end }}
    {{- end }}
{{- end }}

{{/*
lock-reaper.kubernetesEnv: the Kubernetes evidence settings (kubernetes.*),
and enabled the pod's own name, namespace and uid (the downward API) for the
Events of its passes. Disabled, the reaper is told so, rather than left to
`auto`.
*/}}
{{- define "lock-reaper.kubernetesEnv" -}}
{{- $enabled := include "lock-reaper.kubernetesEnabled" . }}
- name: REAPER_KUBERNETES_ENABLED
  value: {{ ternary "true" "false" (eq $enabled "true") | quote }}
{{- if $enabled }}
- name: REAPER_KUBERNETES_NAMESPACE
  value: {{ include "lock-reaper.kubernetesNamespace" . | quote }}
{{- with include "lock-reaper.kubernetesSelector" . }}
- name: REAPER_KUBERNETES_SELECTOR
  value: {{ . | quote }}
{{- end }}
{{- with .Values.kubernetes.container }}
- name: REAPER_KUBERNETES_CONTAINER
  value: {{ . | quote }}
{{- end }}
{{- /* The reaper's own pod, which a pass's Events are about when no worker
pod fits them (a mass-death hold). */}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
{{- end }}
{{- end }}

{{/*
What every lock-reaper container has in common: image, environment, mounts,
resources and securityContext. Connection settings from Secrets are read from
files (the *_FILE form of each REAPER_* variable), never from environment
values, so they show neither in the pod spec nor in the process environment.
*/}}
{{- define "lock-reaper.containerBase" -}}
image: {{ include "lock-reaper.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
env:
  - name: REAPER_CONFIG
    value: /etc/lock-reaper/config.yaml
  {{- range include "lock-reaper.secretFiles" . | fromJsonArray }}
  - name: {{ .env }}_FILE
    value: /etc/lock-reaper/{{ .path }}
  {{- end }}
  {{- with include "lock-reaper.redisServiceEnv" . }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- include "lock-reaper.kubernetesEnv" . | nindent 2 }}
  {{- if dig "limits" "memory" "" .Values.resources }}
  {{- /* The binary sets its soft memory limit (GOMEMLIMIT) to this less 32 MiB:
  its code pages count in the container's memory too. */}}
  - name: REAPER_MEMORY_LIMIT
    valueFrom:
      resourceFieldRef:
        resource: limits.memory
  {{- end }}
  {{- with .Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .Values.extraEnvFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumeMounts:
  - name: lock-reaper
    mountPath: /etc/lock-reaper
    readOnly: true
  {{- with .Values.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .Values.resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "lock-reaper.containerSecurityContext" . | nindent 2 }}
{{- end }}

{{/*
Pod-level settings shared by the CronJob's and the Deployment's pods. The
service account token is mounted only for kubernetes.enabled, the one
feature that reads the Kubernetes API.
*/}}
{{- define "lock-reaper.podSpec" -}}
serviceAccountName: {{ include "lock-reaper.serviceAccountName" . }}
automountServiceAccountToken: {{ eq (include "lock-reaper.kubernetesEnabled" .) "true" }}
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
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- include "lock-reaper.podSecurityContext" . | nindent 2 }}
volumes:
  - {{ include "lock-reaper.volume" . | indent 4 | trim }}
  {{- with .Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
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
{{- include "lock-reaper.requireNativeSidecars" . -}}
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
lock-reaper.sidecarPatch: a strategic merge patch of a Pulp worker Deployment
that adds the sidecar, its volume and extraVolumes (initContainers and
volumes merge by name). Sidecar mode keeps it in the ConfigMap, so that the
patch for the release's values is one kubectl away: printed in the notes it
made them longer than a screen.
*/}}
{{- define "lock-reaper.sidecarPatch" -}}
spec:
  template:
    spec:
      initContainers:
        - {{ include "lock-reaper.sidecar" . | indent 10 | trim }}
      volumes:
        - {{ include "lock-reaper.sidecarVolume" . | indent 10 | trim }}
        {{- with .Values.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}

{{/*
lock-reaper.docsURL: the project's docs/kubernetes.md at the release tag of
the chart's appVersion, where the notes send the long commands.
*/}}
{{- define "lock-reaper.docsURL" -}}
{{- printf "%s/blob/v%s/docs/kubernetes.md" (first .Chart.Sources) .Chart.AppVersion }}
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
