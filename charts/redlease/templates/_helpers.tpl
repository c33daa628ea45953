{{/*
Chart name, truncated to a DNS label.
*/}}
{{- define "redlease.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name prefix of every resource: the release name, with the chart name
appended unless the release name already contains it ("redlease" for
`helm install redlease`, so names match `make deploy`'s).
*/}}
{{- define "redlease.fullname" -}}
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

{{/*
Name of the manager's Deployment (and default ServiceAccount name).
*/}}
{{- define "redlease.managerName" -}}
{{- printf "%s-controller-manager" (include "redlease.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Name of a derived resource: "<fullname>-<suffix>", truncated to 63.
*/}}
{{- define "redlease.derivedName" -}}
{{- printf "%s-%s" (include "redlease.fullname" .ctx) .suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "redlease.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every resource.
*/}}
{{- define "redlease.labels" -}}
{{- $own := dict
  "helm.sh/chart" (include "redlease.chart" .)
  "app.kubernetes.io/name" (include "redlease.name" .)
  "app.kubernetes.io/instance" .Release.Name
  "app.kubernetes.io/version" .Chart.AppVersion
  "app.kubernetes.io/managed-by" .Release.Service
  "app.kubernetes.io/part-of" "redlease" }}
{{- /* the chart's own labels win over commonLabels */}}
{{- toYaml (merge $own (deepCopy (default (dict) .Values.commonLabels))) }}
{{- end }}

{{/*
Selector labels of the manager pods.
*/}}
{{- define "redlease.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redlease.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
The manager's ServiceAccount name.
*/}}
{{- define "redlease.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "redlease.managerName" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" when leader election is on: asked for, or needed by several replicas.
*/}}
{{- define "redlease.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{- define "redlease.leaderElectionID" -}}
{{- default (printf "%s-manager.redlease.io" (include "redlease.fullname" .)) .Values.leaderElection.id }}
{{- end }}

{{/*
An image reference, the one place the chart builds one (the manager's and
lockctl's): [registry/]repository:tag[@digest]. The registry is
global.imageRegistry when set (Bitnami's convention), else the image's own
registry; the tag defaults to appVersion. Argument: dict "ctx" . "image"
(.Values.image or .Values.lockctl.image).
*/}}
{{- define "redlease.image" -}}
{{- $global := dig "imageRegistry" "" (default (dict) .ctx.Values.global) }}
{{- $registry := default .image.registry $global | trimSuffix "/" }}
{{- $ref := printf "%s:%s" .image.repository (default .ctx.Chart.AppVersion .image.tag) }}
{{- if $registry }}
{{- $ref = printf "%s/%s" $registry $ref }}
{{- end }}
{{- if .image.digest }}
{{- $ref = printf "%s@%s" $ref .image.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{/*
The generated manager rules (files/role.yaml, a copy of config/rbac/role.yaml
kept in sync by `make manifests`).
*/}}
{{- define "redlease.managerRules" -}}
{{- $role := .Files.Get "files/role.yaml" | fromYaml }}
{{- if or (hasKey $role "Error") (not $role.rules) }}
{{- fail "files/role.yaml is missing or has no rules: run `make manifests`" }}
{{- end }}
{{- toYaml $role.rules }}
{{- end }}

{{/*
The generated manager rules narrowed to cluster-scoped resources
(Namespaces, ClusterLockStores and their subresources): what a namespaced
install still needs cluster-wide. Empty when no rule names one.
*/}}
{{- define "redlease.clusterScopedRules" -}}
{{- $scoped := list "namespaces" "clusterlockstores" "clusterlockstores/status" "clusterlockstores/finalizers" }}
{{- $out := list }}
{{- range (.Files.Get "files/role.yaml" | fromYaml).rules }}
{{- $res := list }}
{{- range .resources }}
{{- if has . $scoped }}
{{- $res = append $res . }}
{{- end }}
{{- end }}
{{- if $res }}
{{- $out = append $out (dict "apiGroups" .apiGroups "resources" $res "verbs" .verbs) }}
{{- end }}
{{- end }}
{{- if $out }}
{{- toYaml $out }}
{{- end }}
{{- end }}

{{- define "redlease.metricsServiceName" -}}
{{- include "redlease.derivedName" (dict "ctx" . "suffix" "controller-manager-metrics") }}
{{- end }}

{{/*
The rules of the Role lock-using pods need (pkg/kube, lockctl --lock), for
a list of credentials Secret names: get, list and watch DistributedLocks,
and get those Secrets only. The one chart definition of them: podRole
renders it in every namespace; internal/podrbac.Rules is the Go
side, and test/helm checks that they and docs/library.md agree.
*/}}
{{- define "redlease.podRoleRules" -}}
- apiGroups:
  - redlease.io
  resources:
  - distributedlocks
  verbs:
  - get
  - list
  - watch
- apiGroups:
  - ""
  resources:
  - secrets
  resourceNames:
  {{- range . }}
  - {{ . | quote }}
  {{- end }}
  verbs:
  - get
{{- end }}

{{- /*
redlease.secretName: the credentials Secret the controller writes for a
store ("ClusterLockStore", "LockStore") or an inline lock (any other kind),
derived as podrbac.SecretName derives it (TestPodRoleGrantsTheSecretsOfItsLocks).
Argument: dict "kind" "name".
*/}}
{{- define "redlease.secretName" -}}
{{- $name := .name }}
{{- $full := "" }}
{{- if eq .kind "ClusterLockStore" }}
{{- range list "lock-" "lockstore-" "clusterlockstore-" }}
{{- if and (hasPrefix . $.name) (eq $name $.name) }}
{{- $name = printf "clusterlockstore-%s" $.name }}
{{- end }}
{{- end }}
{{- $full = printf "redlease-%s" $name }}
{{- else if eq .kind "LockStore" }}
{{- $full = printf "redlease-lockstore-%s" $name }}
{{- else }}
{{- $full = printf "redlease-lock-%s" $name }}
{{- end }}
{{- if le (len $full) 253 }}
{{- $full }}
{{- else }}
{{- printf "%s-%s" (regexReplaceAll "[.-]+$" (trunc 242 $full) "") (trunc 10 (sha256sum $full)) }}
{{- end }}
{{- end }}

{{- /*
redlease.podRoleSecrets: the Secrets podRole grants, as a YAML list: the
chart's ClusterLockStore's, those of podRole.locks (the name a lock chooses
in credentialsSecretName, else derived from its store, or from the lock
itself when inline: podrbac.LockSecretName) and podRole.secretNames.
*/}}
{{- define "redlease.podRoleSecrets" -}}
{{- $names := list }}
{{- if .Values.clusterLockStore.enabled }}
{{- $names = append $names (include "redlease.secretName" (dict "kind" "ClusterLockStore" "name" .Values.clusterLockStore.name)) }}
{{- end }}
{{- if .Values.quickstart.enabled }}
{{- $names = append $names (include "redlease.secretName" (dict "kind" "ClusterLockStore" "name" .Values.quickstart.storeName)) }}
{{- end }}
{{- range .Values.podRole.locks }}
{{- if .credentialsSecretName }}
{{- $names = append $names .credentialsSecretName }}
{{- else if .storeRef }}
{{- $names = append $names (include "redlease.secretName" (dict "kind" .storeRef.kind "name" .storeRef.name)) }}
{{- else }}
{{- $names = append $names (include "redlease.secretName" (dict "kind" "DistributedLock" "name" .name)) }}
{{- end }}
{{- end }}
{{- range .Values.podRole.secretNames }}
{{- $names = append $names . }}
{{- end }}
{{- toYaml (uniq $names) }}
{{- end }}

{{- /*
The quick start's Redis (quickstart.yaml): the name of its StatefulSet,
Service, ServiceAccount, Role and Secret.
*/}}
{{- define "redlease.quickstartName" -}}
{{- include "redlease.derivedName" (dict "ctx" . "suffix" "quickstart-redis") }}
{{- end }}

{{- define "redlease.quickstartSelectorLabels" -}}
app.kubernetes.io/name: {{ include "redlease.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: quickstart-redis
{{- end }}

{{- /* The quick start's containers: the "restricted" Pod Security Standard. */}}
{{- define "redlease.quickstartContainerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
  - ALL
{{- end }}

{{- /*
redlease.quickstartStoreSpec: the quick start's ClusterLockStore spec, on
the Redis of quickstart.yaml: found through its Service's EndpointSlices,
the controller's password from the Secret lockctl aclfile fills, one ACL
user per namespace labelled redlease.io/locks=true, as in production.
*/}}
{{- define "redlease.quickstartStoreSpec" -}}
{{- $name := include "redlease.quickstartName" . -}}
redis:
  mode: Standalone
  service:
    namespace: {{ .Release.Namespace }}
    name: {{ $name }}
    port: 6379
controllerAuth:
  username: redlease-operator
  passwordSecretRef:
    namespace: {{ .Release.Namespace }}
    name: {{ $name }}
    key: password
tenants:
  namespaceSelector:
    matchLabels:
      redlease.io/locks: "true"
  isolation: ACL
  scripts: FunctionsOnly
{{- end }}
