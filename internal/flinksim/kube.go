package flinksim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/datapilot/datapilot/internal/flink"
)

// clusterDomain is the cluster's DNS domain (kubelet --cluster-domain),
// cluster.local on the local platform.
const clusterDomain = "cluster.local"

// Access says why a ServiceAccount (namespace/name) may not use the verbs
// on ConfigMaps in namespace, as Flink's Kubernetes HA services do; empty
// when it may.
type Access func(namespace, serviceAccount string, verbs []string) string

// namespaceView is one namespace's pods, Services and ConfigMaps as the
// watch sees them.
type namespaceView struct {
	namespace  string
	pods       []corev1.Pod
	services   []corev1.Service
	configMaps map[string]*corev1.ConfigMap
}

// flinkPod is a pod whose container starts a Flink process.
type flinkPod struct {
	pod  *corev1.Pod
	ctr  *corev1.Container
	role Role
	obs  Pod
	// conf is what the process reads now (the Engine keeps what it read
	// at start); nil when it would not start.
	conf *conf
}

// grouping is what the watch found in a namespace: the Observation of
// each cluster, and the TaskManagers' clusters to keep them in when their
// address stops resolving.
type grouping struct {
	clusters map[ClusterKey]Observation
	tmKeys   map[string]ClusterKey
	// dials are, per cluster, where its TaskManagers' addresses lead now:
	// they decide registration as much as the pods do.
	dials map[ClusterKey][]string
	// gateways are the SQL Gateway containers, and net the namespace's
	// network their clients dial through.
	gateways []GatewayPod
	net      Network
}

// observeNamespace groups a namespace's Flink pods into clusters as Flink
// wires them. A JobManager belongs to the cluster named by the first
// Service (by name) whose selector matches it, else by its pod; a
// TaskManager to its JobManager's: the cluster whose JobManagers share its
// high-availability identity, else the one whose JobManager pods its
// jobmanager.rpc.address:jobmanager.rpc.port reaches (through a Service's
// selector, ready or not, or a pod's IP or DNS name). A TaskManager whose
// address reaches no JobManager stays where it was (lastTM), else joins
// no cluster: it registers nowhere. The Engine then decides, with the
// configuration each process read at start, who registers with whom.
func observeNamespace(v namespaceView, access Access, confs *confCache, lastTM map[string]ClusterKey) grouping {
	net := newKubeNetwork(v)
	var jms, tms []*flinkPod
	var gateways []GatewayPod
	for i := range v.pods {
		for _, gp := range readGatewayPods(&v.pods[i], v.configMaps) {
			for _, s := range net.selecting(&v.pods[i]) {
				gp.Services = append(gp.Services, s.restView())
			}
			gateways = append(gateways, gp)
		}
		fp := readFlinkPod(&v.pods[i], v.configMaps)
		if fp == nil {
			continue
		}
		if ver, err := flink.ParseVersion(ImageVersion(fp.obs.Image)); err == nil && fp.obs.ConfMissing == "" {
			fp.conf = confs.get(ver, fp.obs, fp.role)
		}
		if fp.role == RoleTaskManager {
			tms = append(tms, fp)
		} else {
			jms = append(jms, fp)
		}
	}
	g := grouping{clusters: map[ClusterKey]Observation{}, tmKeys: map[string]ClusterKey{}, dials: map[ClusterKey][]string{}, gateways: gateways, net: net}
	jmKey := map[string]ClusterKey{} // by pod UID
	haKey := map[string]ClusterKey{}
	for _, jm := range jms {
		k := ClusterKey{Namespace: v.namespace, Name: jm.pod.Name}
		if s := net.selecting(jm.pod); len(s) > 0 {
			k.Name = s[0].svc.Name
		}
		jmKey[string(jm.pod.UID)] = k
		if jm.conf != nil {
			if id := haIdentity(jm.conf); id != "" {
				if _, ok := haKey[id]; !ok {
					haKey[id] = k
				}
				jm.obs.KubernetesAccess = kubernetesAccess(jm, access, haConfigMapVerbs)
			}
		}
		o := g.clusters[k]
		o.JobManagers = append(o.JobManagers, jm.obs)
		g.clusters[k] = o
	}
	for _, tm := range tms {
		tm.obs.KubernetesAccess = kubernetesAccess(tm, access, haRetrievalVerbs)
		k, ok := tmCluster(tm, net, jmKey, haKey)
		if !ok {
			k, ok = lastTM[string(tm.pod.UID)]
		}
		if !ok {
			continue
		}
		g.tmKeys[string(tm.pod.UID)] = k
		if tm.conf != nil && haIdentity(tm.conf) == "" {
			host, _ := tm.conf.raw("jobmanager.rpc.address")
			port, _ := tm.conf.port("jobmanager.rpc.port")
			g.dials[k] = append(g.dials[k], fmt.Sprintf("%s %s:%d %v", tm.pod.UID, host, port, net.Dial(host, port)))
		}
		o := g.clusters[k]
		o.TaskManagers = append(o.TaskManagers, tm.obs)
		g.clusters[k] = o
	}
	for k, o := range g.clusters {
		o.Network = net
		seen := map[string]bool{}
		for _, jm := range o.JobManagers {
			for _, s := range net.selectedBy[jm.UID] {
				if !seen[s.svc.Name] {
					seen[s.svc.Name] = true
					o.Services = append(o.Services, s.restView())
				}
			}
		}
		sort.Slice(o.Services, func(i, j int) bool { return o.Services[i].Name < o.Services[j].Name })
		g.clusters[k] = o
	}
	return g
}

// kubernetesAccess asks whether the pod's ServiceAccount may use the verbs
// on ConfigMaps in kubernetes.namespace (default "default"), when its
// process runs Kubernetes HA.
func kubernetesAccess(fp *flinkPod, access Access, verbs []string) string {
	if fp.conf == nil || access == nil {
		return ""
	}
	if mode, _ := fp.conf.value("high-availability.type"); !strings.EqualFold(mode, "kubernetes") {
		return ""
	}
	ns, _ := fp.conf.value("kubernetes.namespace")
	sa := fp.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return access(ns, fp.pod.Namespace+"/"+sa, verbs)
}

// tmCluster is the cluster a TaskManager's configuration points it at.
func tmCluster(tm *flinkPod, net *kubeNetwork, jmKey, haKey map[string]ClusterKey) (ClusterKey, bool) {
	if tm.conf == nil {
		return ClusterKey{}, false
	}
	if id := haIdentity(tm.conf); id != "" {
		k, ok := haKey[id]
		return k, ok
	}
	host, _ := tm.conf.raw("jobmanager.rpc.address")
	port, err := tm.conf.port("jobmanager.rpc.port")
	if err != nil {
		return ClusterKey{}, false
	}
	for _, ep := range net.dial(host, port, true) {
		if k, ok := jmKey[ep.Pod]; ok {
			return k, true
		}
	}
	return ClusterKey{}, false
}

// haIdentity is what the process's high-availability services share with
// the other processes of its cluster, as readHAConfig names it; "" without
// high availability (or a configuration that would not start).
func haIdentity(c *conf) string {
	raw, _ := c.value("high-availability.type")
	mode := strings.ToUpper(raw)
	clusterID, _ := c.value("high-availability.cluster-id")
	switch mode {
	case "ZOOKEEPER":
		quorum, _ := c.raw("high-availability.zookeeper.quorum")
		root, _ := c.value("high-availability.zookeeper.path.root")
		return "zookeeper:" + strings.ReplaceAll(quorum, " ", "") + root + "/" + strings.Trim(clusterID, "/")
	case "KUBERNETES":
		id, _ := c.raw("kubernetes.cluster-id")
		ns, _ := c.value("kubernetes.namespace")
		return "kubernetes:" + ns + "/" + id
	}
	return ""
}

// readFlinkPod reads a pod whose container starts Flink: the first
// container whose entrypoint argument is a Flink role. Any other pod runs
// no Flink process.
func readFlinkPod(p *corev1.Pod, cms map[string]*corev1.ConfigMap) *flinkPod {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		env := containerEnv(p, c, cms)
		role, args := ContainerRole(expandAll(c.Command, env), expandAll(c.Args, env))
		if role == RoleNone {
			continue
		}
		fp := &flinkPod{pod: p, ctr: c, role: role}
		fp.obs = Pod{
			UID: string(p.UID), Name: p.Name, Created: p.CreationTimestamp.Time,
			Running: p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning,
			Image:   c.Image, Role: role, StartArgs: args, Env: env, Hostname: hostnameF(p),
		}
		fp.obs.Ready = fp.obs.Running && podReady(p)
		readConfDir(&fp.obs, p, c, cms)
		return fp
	}
	return nil
}

// readGatewayPods reads the containers of a pod that run the SQL Gateway
// (GatewayArgs), each with the configuration directory it mounts.
func readGatewayPods(p *corev1.Pod, cms map[string]*corev1.ConfigMap) []GatewayPod {
	var out []GatewayPod
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		env := containerEnv(p, c, cms)
		args, ok := GatewayArgs(expandAll(c.Command, env), expandAll(c.Args, env))
		if !ok {
			continue
		}
		gp := GatewayPod{Container: c.Name, Pod: Pod{
			UID: string(p.UID), Name: p.Name, Created: p.CreationTimestamp.Time,
			Running: p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning,
			Image:   c.Image, StartArgs: args, Env: env, Hostname: hostnameF(p),
		}}
		gp.Ready = gp.Running && podReady(p)
		readConfDir(&gp.Pod, p, c, cms)
		if gp.ConfMissing != "" {
			// The kubelet cannot start the container.
			gp.Running, gp.Ready = false, false
		}
		out = append(out, gp)
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hostnameF is what `hostname -f` prints in the pod: the kubelet's
// /etc/hosts names the pod by spec.hostname (default its name), fully
// qualified under spec.subdomain when it has one.
func hostnameF(p *corev1.Pod) string {
	h := p.Spec.Hostname
	if h == "" {
		h = p.Name
		if len(h) > 63 {
			h = h[:63]
		}
	}
	if p.Spec.Subdomain != "" {
		return h + "." + p.Spec.Subdomain + "." + p.Namespace + ".svc." + clusterDomain
	}
	return h
}

// containerEnv is the container's environment as the kubelet sets it:
// envFrom ConfigMaps, then env in order, each value with $(VAR) expanded
// from the ones before, and the downward API fields it resolves. Secrets
// are not watched: a variable from one is unset here.
func containerEnv(p *corev1.Pod, c *corev1.Container, cms map[string]*corev1.ConfigMap) map[string]string {
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		if cm := cms[from.ConfigMapRef.Name]; cm != nil {
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			if v, ok := fieldRef(p, e.ValueFrom.FieldRef.FieldPath); ok {
				env[e.Name] = v
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			if cm := cms[e.ValueFrom.ConfigMapKeyRef.Name]; cm != nil {
				if v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
					env[e.Name] = v
				}
			}
		}
	}
	return env
}

func fieldRef(p *corev1.Pod, field string) (string, bool) {
	switch field {
	case "metadata.name":
		return p.Name, true
	case "metadata.namespace":
		return p.Namespace, true
	case "metadata.uid":
		return string(p.UID), true
	case "spec.nodeName":
		return p.Spec.NodeName, true
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, true
	case "status.podIP":
		return p.Status.PodIP, true
	case "status.hostIP":
		return p.Status.HostIP, true
	}
	for _, m := range []struct {
		prefix string
		from   map[string]string
	}{{"metadata.labels['", p.Labels}, {"metadata.annotations['", p.Annotations}} {
		if k, ok := strings.CutPrefix(field, m.prefix); ok {
			v, ok := m.from[strings.TrimSuffix(k, "']")]
			return v, ok
		}
	}
	return "", false
}

// expand replaces $(VAR) with the variable's value, as the kubelet does in
// env values, command and args: $$ is a literal $, and a reference to an
// unknown variable stays as it is.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := env[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func expandAll(ss []string, env map[string]string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = expand(s, env)
	}
	return out
}

// readConfDir finds the configuration the container's Flink reads: the
// directory $FLINK_CONF_DIR names (bin/config.sh; default
// $FLINK_HOME/conf, /opt/flink/conf in the official image), as the mounts
// make it. A volume mounted there replaces it (a ConfigMap shows its keys,
// or its items at their paths); a subPath mount adds or replaces one file;
// a ConfigMap that does not exist keeps the container from starting,
// unless it is optional. With no mount, the image's own directory is
// there only at $FLINK_HOME/conf. The entrypoint edits ${FLINK_HOME}/conf
// only: the process sees its edits when that is the directory it reads and
// it is writable (not a ConfigMap, Secret, projected or downward API
// volume, which the kubelet mounts read-only; not a read-only mount; for
// the image's own, not under readOnlyRootFilesystem; and no mounted file
// in it the edits would have to replace). Every other mount is a Mount.
func readConfDir(out *Pod, p *corev1.Pod, c *corev1.Container, cms map[string]*corev1.ConfigMap) {
	home := out.Env["FLINK_HOME"]
	if home == "" {
		home = defaultFlinkHome
	}
	home = path.Clean(home)
	dir := out.Env["FLINK_CONF_DIR"]
	if dir == "" {
		dir = home + "/conf"
	}
	dir = path.Clean(dir)
	out.ConfDir = dir
	volumes := map[string]corev1.Volume{}
	for _, v := range p.Spec.Volumes {
		volumes[v.Name] = v
	}
	var files map[string]string
	dirMounted, writable, fileMounted := false, true, false
	for _, m := range c.VolumeMounts {
		v, mp := volumes[m.Name], path.Clean(m.MountPath)
		switch {
		case mp == dir && m.SubPath == "":
			dirMounted = true
			writable = !m.ReadOnly && v.ConfigMap == nil && v.Secret == nil && v.Projected == nil && v.DownwardAPI == nil
			fs, missing := volumeFiles(v, cms)
			if missing != "" {
				out.ConfMissing = missing
			}
			files = fs
		case path.Dir(mp) == dir && m.SubPath != "":
			fs, missing := volumeFiles(v, cms)
			if missing != "" {
				out.ConfMissing = missing
				continue
			}
			if content, ok := fs[m.SubPath]; ok {
				if files == nil {
					files = map[string]string{}
				}
				files[path.Base(mp)] = content
			}
			fileMounted = true
		default:
			mount := Mount{Path: m.MountPath}
			if v.PersistentVolumeClaim != nil {
				mount.Claim = v.PersistentVolumeClaim.ClaimName
			}
			out.Mounts = append(out.Mounts, mount)
		}
	}
	rootReadOnly := c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem
	switch {
	case dirMounted:
		out.Conf = files
	case dir == home+"/conf" && home == defaultFlinkHome:
		// The image's own directory, with any subPath files over it.
		writable = !rootReadOnly
		if files != nil {
			out.Conf = files
			out.ConfOverImage = true
		}
	case files != nil:
		out.Conf = files
		writable = !rootReadOnly
	default:
		out.NoConfDir = true
	}
	out.ConfWritable = writable && !fileMounted && dir == home+"/conf" && out.ConfMissing == ""
}

// volumeFiles are the files a ConfigMap volume shows (missing names the
// ConfigMap when it does not exist and is not optional); other volumes
// show none the simulator knows of.
func volumeFiles(v corev1.Volume, cms map[string]*corev1.ConfigMap) (map[string]string, string) {
	if v.ConfigMap == nil {
		return map[string]string{}, ""
	}
	cm := cms[v.ConfigMap.Name]
	if cm == nil {
		if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
			return map[string]string{}, ""
		}
		return nil, v.ConfigMap.Name
	}
	return configMapFiles(cm, v.ConfigMap.Items), ""
}

// configMapFiles are the files a ConfigMap volume shows: every key, or the
// listed items at their paths.
func configMapFiles(cm *corev1.ConfigMap, items []corev1.KeyToPath) map[string]string {
	files := map[string]string{}
	if len(items) == 0 {
		for k, v := range cm.Data {
			files[k] = v
		}
		return files
	}
	for _, it := range items {
		if v, ok := cm.Data[it.Key]; ok {
			files[it.Path] = v
		}
	}
	return files
}

// kubeNetwork is a namespace's DNS names and Services as a process in it
// dials them.
type kubeNetwork struct {
	namespace string
	services  []*kubeService
	pods      map[string]*corev1.Pod // by UID
	byIP      map[string]string      // pod IP to UID
	byFQDN    map[string]string      // hostname.subdomain.ns.svc.<domain> to UID
	// selectedBy are the Services whose selector matches a pod, by UID.
	selectedBy map[string][]*kubeService
	// byName and byClusterIP find a Service.
	byName, byClusterIP map[string]*kubeService
}

type kubeService struct {
	svc *corev1.Service
	// ready and all are the pods the selector matches: the endpoints
	// (running and Ready, or running with publishNotReadyAddresses), and
	// every one, which names the cluster whatever the pods' state.
	ready, all []*corev1.Pod
}

func newKubeNetwork(v namespaceView) *kubeNetwork {
	n := &kubeNetwork{namespace: v.namespace, pods: map[string]*corev1.Pod{}, byIP: map[string]string{}, byFQDN: map[string]string{},
		selectedBy: map[string][]*kubeService{}, byName: map[string]*kubeService{}, byClusterIP: map[string]*kubeService{}}
	byLabel := map[string][]*corev1.Pod{}
	for i := range v.pods {
		p := &v.pods[i]
		n.pods[string(p.UID)] = p
		if p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning {
			n.byIP[p.Status.PodIP] = string(p.UID)
		}
		for k, val := range p.Labels {
			byLabel[k+"="+val] = append(byLabel[k+"="+val], p)
		}
	}
	for i := range v.services {
		s := &v.services[i]
		ks := &kubeService{svc: s}
		if len(s.Spec.Selector) > 0 {
			// The smallest candidate set of one selector pair, then the rest.
			var cands []*corev1.Pod
			first := true
			for k, val := range s.Spec.Selector {
				if c := byLabel[k+"="+val]; first || len(c) < len(cands) {
					cands, first = c, false
				}
			}
			for _, p := range cands {
				if !selects(s.Spec.Selector, p.Labels) {
					continue
				}
				ks.all = append(ks.all, p)
				running := p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
				if running && (podReady(p) || s.Spec.PublishNotReadyAddresses) {
					ks.ready = append(ks.ready, p)
				}
			}
		}
		n.services = append(n.services, ks)
	}
	sort.Slice(n.services, func(i, j int) bool { return n.services[i].svc.Name < n.services[j].svc.Name })
	for _, s := range n.services {
		n.byName[s.svc.Name] = s
		if ip := s.svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
			n.byClusterIP[ip] = s
		}
		for _, p := range s.all {
			n.selectedBy[string(p.UID)] = append(n.selectedBy[string(p.UID)], s)
		}
		if s.svc.Spec.ClusterIP != corev1.ClusterIPNone {
			continue
		}
		// A headless Service gives the pods it selects whose subdomain it
		// is their DNS names.
		for _, p := range s.ready {
			if p.Spec.Subdomain == s.svc.Name {
				h := p.Spec.Hostname
				if h == "" {
					h = p.Name
				}
				fq := h + "." + s.svc.Name + "." + n.namespace + ".svc"
				n.byFQDN[fq] = string(p.UID)
				n.byFQDN[fq+"."+clusterDomain] = string(p.UID)
			}
		}
	}
	return n
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// selecting are the Services whose selector matches the pod, by name.
func (n *kubeNetwork) selecting(p *corev1.Pod) []*kubeService {
	return n.selectedBy[string(p.UID)]
}

// endpoints are where a connection to the Service's port lands, as the
// EndpointSlice controller and kube-proxy route it: each pod the Service
// publishes, at the port's targetPort (a number, or the name of one of the
// pod's container ports; a pod without that name is no endpoint). A
// headless Service has no proxy: its DNS name gives the pods, dialled at
// the client's port.
func (s *kubeService) endpoints(port int32, all bool) []Endpoint {
	pods := s.ready
	if all {
		pods = s.all
	}
	var out []Endpoint
	if s.svc.Spec.ClusterIP == corev1.ClusterIPNone {
		for _, p := range pods {
			out = append(out, Endpoint{Pod: string(p.UID), Port: port})
		}
		return out
	}
	for _, sp := range s.svc.Spec.Ports {
		if sp.Port != port || (sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP) {
			continue
		}
		for _, p := range pods {
			if tp, ok := targetPort(sp.TargetPort, sp.Port, p); ok {
				out = append(out, Endpoint{Pod: string(p.UID), Port: tp})
			}
		}
	}
	return out
}

func targetPort(tp intstr.IntOrString, port int32, p *corev1.Pod) (int32, bool) {
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return port, true
		}
		return tp.IntVal, true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal && (cp.Protocol == "" || cp.Protocol == corev1.ProtocolTCP) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// restView is the Service as the Engine routes REST clients through it.
func (s *kubeService) restView() Service {
	out := Service{Name: s.svc.Name, Ports: map[int32][]Endpoint{}}
	ports := []int32{}
	if s.svc.Spec.ClusterIP == corev1.ClusterIPNone {
		ports = append(ports, RESTPort)
	}
	for _, sp := range s.svc.Spec.Ports {
		ports = append(ports, sp.Port)
	}
	for _, p := range ports {
		if eps := s.endpoints(p, false); len(eps) > 0 {
			out.Ports[p] = eps
		}
	}
	return out
}

// Dial resolves host:port as a process in the namespace reaches it.
func (n *kubeNetwork) Dial(host string, port int32) []Endpoint { return n.dial(host, port, false) }

// dial resolves host:port: a Service's name (short, with its namespace,
// .svc or the cluster domain) or cluster IP, a pod IP, or a pod's DNS name
// under a headless Service. all counts pods that are not Ready, for
// grouping. Names of other namespaces are not resolved.
func (n *kubeNetwork) dial(host string, port int32, all bool) []Endpoint {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if host == "" {
		return nil
	}
	if uid, ok := n.byIP[host]; ok {
		return []Endpoint{{Pod: uid, Port: port}}
	}
	if uid, ok := n.byFQDN[host]; ok {
		return []Endpoint{{Pod: uid, Port: port}}
	}
	name := host
	for _, suffix := range []string{"." + n.namespace + ".svc." + clusterDomain, "." + n.namespace + ".svc", "." + n.namespace} {
		if trimmed, ok := strings.CutSuffix(host, suffix); ok {
			name = trimmed
			break
		}
	}
	if s, ok := n.byClusterIP[host]; ok {
		return s.endpoints(port, all)
	}
	if s, ok := n.byName[name]; ok && !strings.Contains(name, ".") {
		return s.endpoints(port, all)
	}
	return nil
}

// confCache keeps what pods' configurations read, by everything that
// decides it, so a namespace's resync parses only what changed.
type confCache struct {
	m map[string]*conf
}

func (c *confCache) get(v flink.Version, p Pod, r Role) *conf {
	h := sha256.New()
	for _, s := range []string{v.String(), string(r), p.ConfDir, p.Hostname, strconv.FormatBool(p.ConfWritable), strconv.FormatBool(p.NoConfDir), strconv.FormatBool(p.Conf == nil)} {
		h.Write([]byte(s + "\x00"))
	}
	for _, m := range []map[string]string{p.Conf, p.Env} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			h.Write([]byte(k + "\x00" + m[k] + "\x00"))
		}
		h.Write([]byte("\x01"))
	}
	for _, a := range p.StartArgs {
		h.Write([]byte(a + "\x00"))
	}
	key := hex.EncodeToString(h.Sum(nil))
	if cf, ok := c.m[key]; ok {
		return cf
	}
	if c.m == nil || len(c.m) > 20000 {
		c.m = map[string]*conf{}
	}
	cf, err := podConf(v, p, r)
	if err != nil {
		cf = nil
	}
	c.m[key] = cf
	return cf
}
