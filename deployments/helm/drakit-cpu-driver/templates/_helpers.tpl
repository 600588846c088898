{{/*
The chart's name: the app.kubernetes.io/name label that selects the driver
pods.
*/}}
{{- define "drakit-cpu-driver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the DaemonSet, service account, cluster role and binding and the
admission policy and binding: the release name if it contains the chart
name, else <release>-<chart>, at most 63 characters.
*/}}
{{- define "drakit-cpu-driver.fullname" -}}
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
The namespace of the driver's namespaced objects.
*/}}
{{- define "drakit-cpu-driver.namespace" -}}
{{- required "namespace.name is required" .Values.namespace.name }}
{{- end }}

{{/*
The driver name, checked: a DNS subdomain of at most 63 characters.
*/}}
{{- define "drakit-cpu-driver.driverName" -}}
{{- $n := required "driverName is required" .Values.driverName }}
{{- if or (gt (len $n) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $n)) }}
{{- fail (printf "driverName %q: want a DNS subdomain of at most 63 characters" $n) }}
{{- end }}
{{- $n }}
{{- end }}

{{/*
The chart's own labels: helm.sh/chart and app.kubernetes.io/ instance,
version and managed-by. Not in selectors.
*/}}
{{- define "drakit-cpu-driver.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels of the objects that are not named after the driver's workload (the
namespace, the DeviceClasses).
*/}}
{{- define "drakit-cpu-driver.partOfLabels" -}}
app.kubernetes.io/part-of: drakit
{{ include "drakit-cpu-driver.helmLabels" . }}
{{- end }}

{{/*
The labels that select the driver pods.
*/}}
{{- define "drakit-cpu-driver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "drakit-cpu-driver.name" . }}
{{- end }}

{{/*
Labels of the driver's workload objects and pods.
*/}}
{{- define "drakit-cpu-driver.labels" -}}
{{ include "drakit-cpu-driver.selectorLabels" . }}
{{ include "drakit-cpu-driver.partOfLabels" . }}
{{- end }}

{{/*
The DaemonSet's name: the full name, with node <fullname>-<node, dots as
dashes> (a DaemonSet per node, as drakit's deploy --node).
*/}}
{{- define "drakit-cpu-driver.daemonSetName" -}}
{{- $name := include "drakit-cpu-driver.fullname" . }}
{{- if .Values.node }}
{{- $pinned := printf "%s-%s" $name (replace "." "-" .Values.node) }}
{{- if gt (len $pinned) 63 }}
{{- fail (printf "node %q: the DaemonSet %s has %d characters, at most 63: a shorter release name or fullnameOverride" .Values.node $pinned (len $pinned)) }}
{{- end }}
{{- $pinned }}
{{- else }}
{{- $name }}
{{- end }}
{{- end }}

{{/*
The labels that select the driver pods: with node, also
drakit.dev/node=<node>.
*/}}
{{- define "drakit-cpu-driver.podSelectorLabels" -}}
{{ include "drakit-cpu-driver.selectorLabels" . }}
{{- with .Values.node }}
drakit.dev/node: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Labels of the DaemonSet and its pods.
*/}}
{{- define "drakit-cpu-driver.podLabels" -}}
{{ include "drakit-cpu-driver.podSelectorLabels" . }}
{{ include "drakit-cpu-driver.partOfLabels" . }}
{{- end }}

{{/*
The driver pods' nodeSelector as YAML: nodeSelector, with node also
kubernetes.io/hostname=<node>.
*/}}
{{- define "drakit-cpu-driver.nodeSelector" -}}
{{- $selector := deepCopy .Values.nodeSelector }}
{{- with .Values.node }}
{{- $_ := set $selector "kubernetes.io/hostname" . }}
{{- end }}
{{- with $selector }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
The driver image: <repository>:<tag>, the tag defaulting to appVersion.
*/}}
{{- define "drakit-cpu-driver.image" -}}
{{- printf "%s:%s" (required "image.repository is required" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
A host path value (list: value name, path), checked as reference/deploy
does: absolute and clean, neither a system directory (deploy's systemDirs)
nor in one of the system's program, library, boot, device, process and
sysfs trees (systemTrees): the driver pod would mount it from the host.
*/}}
{{- define "drakit-cpu-driver.hostPath" -}}
{{- $name := index . 0 }}
{{- $p := index . 1 }}
{{- if or (not (isAbs $p)) (ne (clean $p) $p) }}
{{- fail (printf "%s %q: want a clean absolute path" $name $p) }}
{{- end }}
{{- $systemDirs := list "/" "/bin" "/boot" "/dev" "/etc" "/home" "/lib" "/lib32" "/lib64" "/libx32" "/media" "/mnt"
  "/opt" "/proc" "/root" "/run" "/sbin" "/srv" "/sys" "/tmp" "/usr" "/var"
  "/var/cache" "/var/lib" "/var/local" "/var/lock" "/var/log" "/var/mail" "/var/opt" "/var/run"
  "/var/spool" "/var/tmp"
  "/etc/containerd" "/etc/kubernetes" "/run/containerd" "/var/lib/containerd" "/var/lib/etcd" }}
{{- if has $p $systemDirs }}
{{- fail (printf "%s %q is a system directory: the driver pod would mount it from the host" $name $p) }}
{{- end }}
{{- range list "/bin" "/boot" "/dev" "/lib" "/lib32" "/lib64" "/libx32" "/proc" "/sbin" "/sys" "/usr" }}
{{- if hasPrefix (printf "%s/" .) $p }}
{{- fail (printf "%s %q lies in %s, a system directory: the driver pod would mount it from the host" $name $p .) }}
{{- end }}
{{- end }}
{{- $p }}
{{- end }}

{{/*
Where the driver registers: <kubeletRootDir>/plugins_registry.
*/}}
{{- define "drakit-cpu-driver.registrarDir" -}}
{{- clean (printf "%s/plugins_registry" (include "drakit-cpu-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir))) }}
{{- end }}

{{/*
The driver's plugin directory: <kubeletRootDir>/plugins/<driverName>.
*/}}
{{- define "drakit-cpu-driver.pluginDir" -}}
{{- clean (printf "%s/plugins/%s" (include "drakit-cpu-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir)) (include "drakit-cpu-driver.driverName" .)) }}
{{- end }}

{{/*
The NUMA nodes' directory: <hostRoot>/sys/devices/system/node.
*/}}
{{- define "drakit-cpu-driver.numaDir" -}}
{{- clean (printf "%s/sys/devices/system/node" (include "drakit-cpu-driver.hostPath" (list "hostRoot" .Values.hostRoot))) }}
{{- end }}

{{/*
Checks what reference/deploy checks across the host path values and
renders nothing: no two of kubeletRootDir, cdiDir, hostRoot and stateDir
overlap (each is mounted with its own access, so neither may contain the
other), and the driver's sockets fit AF_UNIX's 107 bytes.
*/}}
{{- define "drakit-cpu-driver.checkHostPaths" -}}
{{- $paths := list
  (list "kubeletRootDir" (include "drakit-cpu-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir)))
  (list "cdiDir" (include "drakit-cpu-driver.hostPath" (list "cdiDir" .Values.cdiDir)))
  (list "hostRoot" (include "drakit-cpu-driver.hostPath" (list "hostRoot" .Values.hostRoot)))
  (list "stateDir" (include "drakit-cpu-driver.hostPath" (list "stateDir" .Values.stateDir))) }}
{{- range $i, $a := $paths }}
{{- range $j, $b := $paths }}
{{- $x := index $a 1 }}
{{- $y := index $b 1 }}
{{- if and (lt $i $j) (or (eq $x $y) (hasPrefix (printf "%s/" $y) $x) (hasPrefix (printf "%s/" $x) $y)) }}
{{- fail (printf "%s %q and %s %q overlap: each is mounted with its own access, so neither may contain the other" (index $a 0) $x (index $b 0) $y) }}
{{- end }}
{{- end }}
{{- end }}
{{- range list (printf "%s/%s-reg.sock" (include "drakit-cpu-driver.registrarDir" .) (include "drakit-cpu-driver.driverName" .)) (printf "%s/dra.sock" (include "drakit-cpu-driver.pluginDir" .)) }}
{{- if gt (len .) 107 }}
{{- fail (printf "kubeletRootDir %q: the driver's socket %s is %d bytes, %d over the 107-byte AF_UNIX limit" $.Values.kubeletRootDir . (len .) (sub (len .) 107)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The driver container's arguments, one per line as a YAML list. Add a flag
here (and a value in values.yaml) to extend the driver's command line.
*/}}
{{- define "drakit-cpu-driver.args" -}}
- --driver-name={{ include "drakit-cpu-driver.driverName" . }}
- --host-root={{ include "drakit-cpu-driver.hostPath" (list "hostRoot" .Values.hostRoot) }}
- --state-dir={{ include "drakit-cpu-driver.hostPath" (list "stateDir" .Values.stateDir) }}
- --cdi-dir={{ include "drakit-cpu-driver.hostPath" (list "cdiDir" .Values.cdiDir) }}
- --kubelet-registrar-dir={{ include "drakit-cpu-driver.registrarDir" . }}
- --kubelet-plugin-dir={{ include "drakit-cpu-driver.pluginDir" . }}
- --v={{ int .Values.verbosity }}
{{- if gt (int .Values.httpPort) 0 }}
- --http-endpoint=127.0.0.1:{{ int .Values.httpPort }}
{{- end }}
{{- end }}

{{/*
KUBERNETES_SERVICE_HOST and _PORT for a hostNetwork pod, as YAML list items,
or nothing with an empty apiServer.host (the kubelet's stay).
*/}}
{{- define "drakit-cpu-driver.apiServerEnv" -}}
{{- if .Values.apiServer.host }}
{{- $port := int .Values.apiServer.port }}
{{- if or (lt $port 1) (gt $port 65535) }}
{{- fail (printf "apiServer.port %d is not a port" $port) }}
{{- end }}
- name: KUBERNETES_SERVICE_HOST
  value: {{ .Values.apiServer.host | quote }}
- name: KUBERNETES_SERVICE_PORT
  value: {{ $port | toString | quote }}
{{- else if .Values.apiServer.port }}
{{- fail "apiServer.port is set without apiServer.host" }}
{{- end }}
{{- end }}
