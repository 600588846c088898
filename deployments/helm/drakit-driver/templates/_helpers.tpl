{{/*
The chart's name: the app.kubernetes.io/name label that selects the driver
pods.
*/}}
{{- define "drakit-driver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the DaemonSet, service account, cluster role and binding and the
admission policy and binding: the release name if it contains the chart
name, else <release>-<chart>, at most 63 characters.
*/}}
{{- define "drakit-driver.fullname" -}}
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
{{- define "drakit-driver.namespace" -}}
{{- required "namespace.name is required" .Values.namespace.name }}
{{- end }}

{{/*
The driver name, checked: a DNS subdomain of at most 63 characters.
*/}}
{{- define "drakit-driver.driverName" -}}
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
{{- define "drakit-driver.helmLabels" -}}
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
{{- define "drakit-driver.partOfLabels" -}}
app.kubernetes.io/part-of: drakit
{{ include "drakit-driver.helmLabels" . }}
{{- end }}

{{/*
The labels that select the driver pods.
*/}}
{{- define "drakit-driver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "drakit-driver.name" . }}
{{- end }}

{{/*
Labels of the driver's workload objects and pods.
*/}}
{{- define "drakit-driver.labels" -}}
{{ include "drakit-driver.selectorLabels" . }}
{{ include "drakit-driver.partOfLabels" . }}
{{- end }}

{{/*
The DaemonSet's name: the full name, with node <fullname>-<node, dots as
dashes> (a DaemonSet per node, as drakit's deploy --node).
*/}}
{{- define "drakit-driver.daemonSetName" -}}
{{- $name := include "drakit-driver.fullname" . }}
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
{{- define "drakit-driver.podSelectorLabels" -}}
{{ include "drakit-driver.selectorLabels" . }}
{{- with .Values.node }}
drakit.dev/node: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Labels of the DaemonSet and its pods.
*/}}
{{- define "drakit-driver.podLabels" -}}
{{ include "drakit-driver.podSelectorLabels" . }}
{{ include "drakit-driver.partOfLabels" . }}
{{- end }}

{{/*
The driver pods' nodeSelector as YAML: nodeSelector, with node also
kubernetes.io/hostname=<node>.
*/}}
{{- define "drakit-driver.nodeSelector" -}}
{{- $selector := deepCopy .Values.nodeSelector }}
{{- with .Values.node }}
{{- $_ := set $selector "kubernetes.io/hostname" . }}
{{- end }}
{{- with $selector }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
The IMEX controller's labels (selector: its name).
*/}}
{{- define "drakit-driver.imexSelectorLabels" -}}
app.kubernetes.io/name: {{ .Values.imex.name }}
{{- end }}

{{- define "drakit-driver.imexLabels" -}}
{{ include "drakit-driver.imexSelectorLabels" . }}
{{ include "drakit-driver.partOfLabels" . }}
{{- end }}

{{/*
The driver image: <repository>:<tag>, the tag defaulting to appVersion.
*/}}
{{- define "drakit-driver.image" -}}
{{- printf "%s:%s" (required "image.repository is required" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
A host path value (list: value name, path), checked as reference/deploy
does: absolute and clean, neither a system directory (deploy's systemDirs)
nor in one of the system's program, library, boot, device, process and
sysfs trees (systemTrees): the driver pod would mount it from the host.
*/}}
{{- define "drakit-driver.hostPath" -}}
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
Where the driver registers: registrarDir, or <kubeletRootDir>/plugins_registry.
*/}}
{{- define "drakit-driver.registrarDir" -}}
{{- $root := include "drakit-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir) }}
{{- if .Values.registrarDir }}
{{- $dir := include "drakit-driver.hostPath" (list "registrarDir" .Values.registrarDir) }}
{{- if not (hasPrefix (printf "%s/" (trimSuffix "/" $root)) $dir) }}
{{- fail (printf "registrarDir %q: want a directory below kubeletRootDir %q" $dir $root) }}
{{- end }}
{{- $dir }}
{{- else }}
{{- clean (printf "%s/plugins_registry" $root) }}
{{- end }}
{{- end }}

{{/*
The driver's plugin directory: <kubeletRootDir>/plugins/<driverName>.
*/}}
{{- define "drakit-driver.pluginDir" -}}
{{- clean (printf "%s/plugins/%s" (include "drakit-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir)) (include "drakit-driver.driverName" .)) }}
{{- end }}

{{/*
The driver root's directories that dynamic MIG writes, by volume, as YAML
(volume: host path).
*/}}
{{- define "drakit-driver.driverRootWritable" -}}
{{- $root := include "drakit-driver.hostPath" (list "driverRoot" .Values.driverRoot) }}
driver-root-state: {{ clean (printf "%s/run/drakit-emulator" $root) }}
driver-root-caps: {{ clean (printf "%s/dev/nvidia-caps" $root) }}
driver-root-capabilities: {{ clean (printf "%s/proc/driver/nvidia/capabilities" $root) }}
{{- end }}

{{/*
Checks what reference/deploy checks across the host path values and
renders nothing: no two of kubeletRootDir, cdiDir and driverRoot overlap
(each is mounted with its own access, so neither may contain the other),
and the driver's sockets fit AF_UNIX's 107 bytes.
*/}}
{{- define "drakit-driver.checkHostPaths" -}}
{{- $paths := list
  (list "kubeletRootDir" (include "drakit-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir)))
  (list "cdiDir" (include "drakit-driver.hostPath" (list "cdiDir" .Values.cdiDir)))
  (list "driverRoot" (include "drakit-driver.hostPath" (list "driverRoot" .Values.driverRoot))) }}
{{- range $i, $a := $paths }}
{{- range $j, $b := $paths }}
{{- $x := index $a 1 }}
{{- $y := index $b 1 }}
{{- if and (lt $i $j) (or (eq $x $y) (hasPrefix (printf "%s/" $y) $x) (hasPrefix (printf "%s/" $x) $y)) }}
{{- fail (printf "%s %q and %s %q overlap: each is mounted with its own access, so neither may contain the other" (index $a 0) $x (index $b 0) $y) }}
{{- end }}
{{- end }}
{{- end }}
{{- range list (printf "%s/%s-reg.sock" (include "drakit-driver.registrarDir" .) (include "drakit-driver.driverName" .)) (printf "%s/dra.sock" (include "drakit-driver.pluginDir" .)) }}
{{- if gt (len .) 107 }}
{{- fail (printf "kubeletRootDir %q: the driver's socket %s is %d bytes, %d over the 107-byte AF_UNIX limit" $.Values.kubeletRootDir . (len .) (sub (len .) 107)) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The driver container's arguments, one per line as a YAML list. Add a flag
here (and a value in values.yaml) to extend the driver's command line.
*/}}
{{- define "drakit-driver.args" -}}
- --driver-name={{ include "drakit-driver.driverName" . }}
- --driver-root={{ include "drakit-driver.hostPath" (list "driverRoot" .Values.driverRoot) }}
- --partitionable-alpha={{ .Values.partitionableAlpha }}
- --device-metadata={{ .Values.deviceMetadata }}
- --cdi-dir={{ include "drakit-driver.hostPath" (list "cdiDir" .Values.cdiDir) }}
- --kubelet-registrar-dir={{ include "drakit-driver.registrarDir" . }}
- --kubelet-plugin-dir={{ include "drakit-driver.pluginDir" . }}
- --binding-conditions={{ .Values.bindingConditions }}
- --v={{ int .Values.verbosity }}
{{- if gt (int .Values.httpPort) 0 }}
- --http-endpoint=127.0.0.1:{{ int .Values.httpPort }}
{{- end }}
{{- if .Values.deviceNodesOnly }}
- --device-nodes-only=true
{{- end }}
{{- if .Values.listAttributes }}
- --list-attributes=true
{{- end }}
{{- end }}

{{/*
KUBERNETES_SERVICE_HOST and _PORT for a hostNetwork pod, as YAML list items,
or nothing with an empty apiServer.host (the kubelet's stay).
*/}}
{{- define "drakit-driver.apiServerEnv" -}}
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

{{/*
The CEL selector of one of the driver's DeviceClasses: the devices of the
driver whose type attribute is the given type (list: root context, type,
value when the attribute is missing).
*/}}
{{- define "drakit-driver.classSelector" -}}
{{- $ctx := index . 0 }}
{{- $driver := include "drakit-driver.driverName" $ctx }}
{{- printf "device.driver == %q && device.attributes[%q].?type.orValue(%q) == %q" $driver $driver (index . 2) (index . 1) }}
{{- end }}
