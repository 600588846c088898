{{/*
The kinds of driver and what each has by default, as YAML: the name of its
objects (and of the app.kubernetes.io/name label), its namespace, driver
name, HTTP port and state directory. Every kind runs the image's one binary,
drakit-driver, with --kind. `drakit driver
deploy --kind <kind>` has the same defaults (reference/deploy.DefaultOptions;
deployments/helm's test renders each kind with the chart's defaults and
compares).
*/}}
{{- define "drakit-driver.kinds" -}}
gpu:
  name: drakit-driver
  namespace: drakit-system
  driverName: gpu.drakit.dev
  httpPort: 9470
nic:
  name: drakit-nic-driver
  namespace: drakit-nic
  driverName: nic.drakit.dev
  httpPort: 9471
cpu:
  name: drakit-cpu-driver
  namespace: drakit-cpu
  driverName: cpu.drakit.dev
  httpPort: 9472
  stateDir: /var/lib/drakit/cpu-driver
tpu:
  name: drakit-tpu-driver
  namespace: drakit-tpu
  driverName: tpu.drakit.dev
  httpPort: 9473
plain:
  name: drakit-plain-driver
  namespace: drakit-plain
  driverName: plain.drakit.dev
  httpPort: 9474
  stateDir: /var/lib/drakit/plain-driver
{{- end }}

{{/*
The defaults of .Values.kind, as YAML (see drakit-driver.kinds), with a plain
variant's names: drakit-plain-<variant> for the objects and the namespace,
<variant>.plain.drakit.dev, <state dir>-<variant>.
*/}}
{{- define "drakit-driver.kind" -}}
{{- $kinds := include "drakit-driver.kinds" . | fromYaml }}
{{- $k := get $kinds .Values.kind }}
{{- if not $k }}
{{- fail (printf "kind %q: want gpu, nic, cpu, tpu or plain" .Values.kind) }}
{{- end }}
{{- $k = deepCopy $k }}
{{- if and (eq .Values.kind "plain") .Values.plain.variant }}
{{- $v := .Values.plain.variant }}
{{- $_ := set $k "name" (printf "drakit-plain-%s" $v) }}
{{- $_ = set $k "namespace" (printf "drakit-plain-%s" $v) }}
{{- $_ = set $k "driverName" (printf "%s.%s" $v $k.driverName) }}
{{- $_ = set $k "stateDir" (printf "%s-%s" $k.stateDir $v) }}
{{- end }}
{{- toYaml $k }}
{{- end }}

{{/*
The name in the app.kubernetes.io/name label that selects the driver pods:
the kind's, or nameOverride.
*/}}
{{- define "drakit-driver.name" -}}
{{- $k := include "drakit-driver.kind" . | fromYaml }}
{{- default $k.name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the DaemonSet, service account, cluster role and binding and the
admission policy and binding: the release name if it contains the name,
else <release>-<name>, at most 63 characters.
*/}}
{{- define "drakit-driver.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "drakit-driver.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespace of the driver's namespaced objects: namespace.name or the
kind's.
*/}}
{{- define "drakit-driver.namespace" -}}
{{- $k := include "drakit-driver.kind" . | fromYaml }}
{{- default $k.namespace .Values.namespace.name }}
{{- end }}

{{/*
The driver name, driverName or the kind's, checked: a DNS subdomain of at
most 63 characters.
*/}}
{{- define "drakit-driver.driverName" -}}
{{- $k := include "drakit-driver.kind" . | fromYaml }}
{{- $n := default $k.driverName .Values.driverName }}
{{- if or (gt (len $n) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" $n)) }}
{{- fail (printf "driverName %q: want a DNS subdomain of at most 63 characters" $n) }}
{{- end }}
{{- $n }}
{{- end }}

{{/*
The driver's HTTP port: httpPort, or the kind's for "".
*/}}
{{- define "drakit-driver.httpPort" -}}
{{- if kindIs "string" .Values.httpPort }}
{{- if ne .Values.httpPort "" }}
{{- fail (printf "httpPort %q: want a port, 0 (none) or \"\" (the kind's)" .Values.httpPort) }}
{{- end }}
{{- $k := include "drakit-driver.kind" . | fromYaml }}
{{- int $k.httpPort }}
{{- else }}
{{- int .Values.httpPort }}
{{- end }}
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
Labels of the driver's workload objects.
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
The driver image: <repository>:<tag>, the tag defaulting to appVersion.
*/}}
{{- define "drakit-driver.image" -}}
{{- printf "%s:%s" (required "image.repository is required" .Values.image.repository) (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
A host path value (list: value name, path), checked as reference/deploy
does: absolute and clean, neither a system directory nor in one of the
system's program, library, boot, device, process and sysfs trees: the
driver pod would mount it from the host.
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

{{- define "drakit-driver.hostRoot" -}}
{{- include "drakit-driver.hostPath" (list "hostRoot" .Values.hostRoot) }}
{{- end }}

{{- define "drakit-driver.cdiDir" -}}
{{- include "drakit-driver.hostPath" (list "cdiDir" .Values.cdiDir) }}
{{- end }}

{{/*
The CPU and plain drivers' state directory: stateDir or the kind's.
*/}}
{{- define "drakit-driver.stateDir" -}}
{{- $k := include "drakit-driver.kind" . | fromYaml }}
{{- include "drakit-driver.hostPath" (list "stateDir" (default $k.stateDir .Values.stateDir)) }}
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
The host path values the kind mounts, as YAML (a list of [value name,
path]), kubeletRootDir and cdiDir first.
*/}}
{{- define "drakit-driver.hostPathValues" -}}
- [kubeletRootDir, {{ include "drakit-driver.hostPath" (list "kubeletRootDir" .Values.kubeletRootDir) | quote }}]
- [cdiDir, {{ include "drakit-driver.cdiDir" . | quote }}]
{{- if ne .Values.kind "plain" }}
- [hostRoot, {{ include "drakit-driver.hostRoot" . | quote }}]
{{- end }}
{{- if has .Values.kind (list "cpu" "plain") }}
- [stateDir, {{ include "drakit-driver.stateDir" . | quote }}]
{{- end }}
{{- end }}

{{/*
Checks what reference/deploy checks across the host path values and
renders nothing: no two of the kind's host paths overlap (each is mounted
with its own access, so neither may contain the other), and the driver's
sockets fit AF_UNIX's 107 bytes.
*/}}
{{- define "drakit-driver.checkHostPaths" -}}
{{- $paths := include "drakit-driver.hostPathValues" . | fromYamlArray }}
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
The driver container's arguments, one per line as a YAML list: the kind's
own flags around the flags every driver has.
*/}}
{{- define "drakit-driver.args" -}}
{{- $kind := .Values.kind }}
- --kind={{ $kind }}
- --driver-name={{ include "drakit-driver.driverName" . }}
{{- if eq $kind "gpu" }}
- --driver-root={{ include "drakit-driver.hostRoot" . }}
- --partitionable-alpha={{ .Values.gpu.partitionableAlpha }}
- --device-metadata={{ .Values.gpu.deviceMetadata }}
{{- else if eq $kind "nic" }}
- --host-root={{ include "drakit-driver.hostRoot" . }}
- --vfs-per-pf={{ int .Values.nic.vfsPerPF }}
{{- else if eq $kind "cpu" }}
- --host-root={{ include "drakit-driver.hostRoot" . }}
- --state-dir={{ include "drakit-driver.stateDir" . }}
{{- else if eq $kind "tpu" }}
- --host-root={{ include "drakit-driver.hostRoot" . }}
- --state-dir={{ include "drakit-driver.pluginDir" . }}
{{- else if eq $kind "plain" }}
- --devices={{ int .Values.plain.devices }}
- --style={{ .Values.plain.style }}
- --defect={{ .Values.plain.defect }}
- --state-dir={{ include "drakit-driver.stateDir" . }}
{{- end }}
- --cdi-dir={{ include "drakit-driver.cdiDir" . }}
- --kubelet-registrar-dir={{ include "drakit-driver.registrarDir" . }}
- --kubelet-plugin-dir={{ include "drakit-driver.pluginDir" . }}
{{- if eq $kind "gpu" }}
- --binding-conditions={{ .Values.gpu.bindingConditions }}
{{- end }}
- --v={{ int .Values.verbosity }}
{{- $port := int (include "drakit-driver.httpPort" .) }}
{{- if gt $port 0 }}
- --http-endpoint=127.0.0.1:{{ $port }}
{{- end }}
{{- if and (eq $kind "gpu") .Values.gpu.deviceNodesOnly }}
- --device-nodes-only=true
{{- end }}
{{- if and (eq $kind "gpu") .Values.gpu.listAttributes }}
- --list-attributes=true
{{- end }}
{{- end }}

{{/*
The kind's own host path volumes, as YAML: a list of name, path, type and
readOnly, after the plugin, registrar and CDI directories every driver
mounts.
*/}}
{{- define "drakit-driver.volumes" -}}
{{- $kind := .Values.kind }}
{{- if eq $kind "gpu" }}
{{- $root := include "drakit-driver.hostRoot" . }}
# Read-only: sysfs, /dev/nvidia*, /proc and the NVML library of the driver
# root.
- {name: driver-root, path: {{ $root | quote }}, type: Directory, readOnly: true}
# Writable, below the read-only driver root: what the emulator's NVML changes
# when dynamic MIG creates or destroys an instance: the NVML state, the
# capability nodes and the capability access files.
- {name: driver-root-state, path: {{ clean (printf "%s/run/drakit-emulator" $root) | quote }}, type: Directory}
- {name: driver-root-caps, path: {{ clean (printf "%s/dev/nvidia-caps" $root) | quote }}, type: Directory}
- {name: driver-root-capabilities, path: {{ clean (printf "%s/proc/driver/nvidia/capabilities" $root) | quote }}, type: Directory}
{{- else if eq $kind "nic" }}
# Writable: the emulator's sysfs, where the driver discovers NICs and creates
# VFs (sriov_numvfs).
- {name: sysfs, path: {{ clean (printf "%s/sys" (include "drakit-driver.hostRoot" .)) | quote }}, type: Directory}
{{- else if eq $kind "cpu" }}
# Writable: the driver's checkpoint. Read-only: the NUMA nodes it publishes.
- {name: state-dir, path: {{ include "drakit-driver.stateDir" . | quote }}, type: DirectoryOrCreate}
- {name: numa-dir, path: {{ clean (printf "%s/sys/devices/system/node" (include "drakit-driver.hostRoot" .)) | quote }}, type: Directory, readOnly: true}
{{- else if eq $kind "tpu" }}
# Read-only: the emulator's sysfs and the host's tpu-env.
- {name: sysfs, path: {{ clean (printf "%s/sys" (include "drakit-driver.hostRoot" .)) | quote }}, type: Directory, readOnly: true}
- {name: metadata, path: {{ clean (printf "%s/run/drakit-emulator/metadata/instance/attributes" (include "drakit-driver.hostRoot" .)) | quote }}, type: Directory, readOnly: true}
{{- else if eq $kind "plain" }}
# Writable: checkpoint.json and devices/<device>, the directories the CDI
# specs mount into containers read-only.
- {name: state-dir, path: {{ include "drakit-driver.stateDir" . | quote }}, type: DirectoryOrCreate}
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
The kind's DeviceClasses, as YAML: a list of name and the expression of the
one CEL selector; a class of each device type the driver publishes (the
first named after the driver), and the IMEX channels' of a GPU driver with
its IMEX controller. The plain driver's are reference/plaindriver's
DeviceClasses for its style.
*/}}
{{- define "drakit-driver.deviceClasses" -}}
{{- $driver := include "drakit-driver.driverName" . }}
{{- $all := printf "device.driver == %q" $driver }}
{{- $type := printf "%s && device.attributes[%q].?type.orValue(\"\") == %%q" $all $driver }}
{{- $kind := .Values.kind }}
{{- if eq $kind "gpu" }}
# Full GPUs (type "gpu", or none), then MIG devices.
- {name: {{ $driver }}, expression: {{ printf "%s && device.attributes[%q].?type.orValue(\"gpu\") == \"gpu\"" $all $driver | quote }}}
- {name: mig.{{ $driver }}, expression: {{ printf $type "mig" | quote }}}
{{- if gt (int .Values.gpu.imex.channels) 0 }}
- {name: imex.{{ $driver }}, expression: {{ printf $type "imex-channel" | quote }}}
{{- end }}
{{- else if eq $kind "nic" }}
# The PFs' bandwidth shares, then the VFs.
- {name: {{ $driver }}, expression: {{ printf $type "pf" | quote }}}
- {name: vf.{{ $driver }}, expression: {{ printf $type "vf" | quote }}}
{{- else if eq $kind "cpu" }}
- {name: {{ $driver }}, expression: {{ $all | quote }}}
{{- else if eq $kind "tpu" }}
# Node-local chips, then the multi-host sub-slices the controller publishes.
- {name: {{ $driver }}, expression: {{ printf $type "chip" | quote }}}
- {name: subslice.{{ $driver }}, expression: {{ printf $type "subslice" | quote }}}
{{- else if eq $kind "plain" }}
{{- $kindOf := printf "%s && device.attributes[%q].kind == %%q" $all $driver }}
{{- $style := .Values.plain.style }}
{{- if eq $style "partitions" }}
- {name: {{ $driver }}, expression: {{ printf $kindOf "whole" | quote }}}
- {name: partition.{{ $driver }}, expression: {{ printf $kindOf "partition" | quote }}}
{{- else if eq $style "consumable-capacity" }}
- {name: {{ $driver }}, expression: {{ printf $kindOf "whole" | quote }}}
- {name: shared.{{ $driver }}, expression: {{ printf $kindOf "shared" | quote }}}
{{- else }}
- {name: {{ $driver }}, expression: {{ $all | quote }}}
{{- end }}
{{- end }}
{{- end }}

{{/*
The kind's cluster-level controller, as YAML, or nothing: the GPU driver's
IMEX channel controller (with gpu.imex.channels), the TPU driver's
sub-slice controller: drakit-driver controller --kind <kind>. Its name, its
container's arguments and whether it reads DeviceClasses (the IMEX
controller's owner).
*/}}
{{- define "drakit-driver.controller" -}}
{{- $driver := include "drakit-driver.driverName" . }}
{{- if and (eq .Values.kind "gpu") (gt (int .Values.gpu.imex.channels) 0) }}
{{- $channels := int .Values.gpu.imex.channels }}
{{- if gt $channels 2048 }}
{{- fail (printf "gpu.imex.channels %d: want 0 (no IMEX controller) to 2048" $channels) }}
{{- end }}
name: {{ .Values.gpu.imex.name }}
args:
- controller
- --kind=gpu
- --driver-name={{ $driver }}
- --device-class=imex.{{ $driver }}
- --channels={{ $channels }}
- --v={{ int .Values.gpu.imex.verbosity }}
readsClasses: true
{{- else if eq .Values.kind "tpu" }}
{{- range splitList "," .Values.tpu.shapes }}
{{- $shape := trim . }}
{{- if ne $shape "full" }}
{{- $chips := 1 }}
{{- range splitList "x" $shape }}
{{- $chips = mul $chips (atoi .) }}
{{- end }}
{{- if gt $chips 8192 }}
{{- fail (printf "tpu.shapes: shape %q: %d chips, more than 8192" $shape $chips) }}
{{- end }}
{{- end }}
{{- end }}
name: {{ .Values.tpu.controller.name }}
args:
- controller
- --kind=tpu
- --driver-name={{ $driver }}
- {{ printf "--shapes=%s" .Values.tpu.shapes | quote }}
- --interval=5s
- --v={{ int .Values.tpu.controller.verbosity }}
{{- end }}
{{- end }}
