package resources

import (
	"net/url"
	"path"
	"sort"
	"strings"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// SharedDir is where a shared claim (spec.storage.claimName or the
// platform's) is mounted in every JobManager and TaskManager.
const SharedDir = "/flink-shared"

// Platform is what the platform team sets once, for every cluster: the
// operator's settings that reach the rendering.
type Platform struct {
	// Storage is the default shared storage (STATE_STORAGE_URI or
	// STATE_STORAGE_CLAIM); nil when the platform gives none.
	Storage *v1.StorageSpec
	// HAClusterRole is the ClusterRole with HAConfigMapVerbs that the
	// pods' own account is bound to, in their namespace, with Kubernetes
	// HA; DefaultHAClusterRole when empty.
	HAClusterRole string
	// OperatorNamespace is where the operator's pods run (POD_NAMESPACE);
	// the SQL Gateway's NetworkPolicy admits them from there only.
	OperatorNamespace string
}

// DefaultHAClusterRole is the ClusterRole config/rbac and the chart ship
// for the Flink pods' Kubernetes HA services.
const DefaultHAClusterRole = "datapilot-flink-ha"

func (p Platform) haClusterRole() string {
	if p.HAClusterRole == "" {
		return DefaultHAClusterRole
	}
	return p.HAClusterRole
}

// State is where one cluster keeps the state that must outlive its pods.
type State struct {
	Checkpoints, Savepoints, HA string
	// Claim is the shared claim to mount at SharedDir; empty for none.
	Claim string
}

// StateOf resolves the cluster's state directories: an explicit directory
// in the spec wins, then <base>/<namespace>/<name>/<kind> under the spec's
// storage or the platform's, then the pod's own data volume.
func StateOf(fc *v1.FlinkCluster, p Platform) State {
	st := fc.Spec.Storage
	if st == nil {
		st = p.Storage
	}
	base, claim := "file://"+DataDir, ""
	if st != nil {
		if st.ClaimName != "" {
			base, claim = "file://"+SharedDir, st.ClaimName
		} else {
			base = strings.TrimRight(st.URI, "/")
		}
		base += "/" + fc.Namespace + "/" + fc.Name
	}
	s := State{Checkpoints: base + "/checkpoints", Savepoints: base + "/savepoints", HA: base + "/ha", Claim: claim}
	if cp := fc.Spec.Checkpointing; cp != nil {
		s.Checkpoints = orDefault(cp.CheckpointsDir, s.Checkpoints)
		s.Savepoints = orDefault(cp.SavepointsDir, s.Savepoints)
	}
	if ha := fc.Spec.HighAvailability; ha != nil {
		s.HA = orDefault(ha.StorageDir, s.HA)
	}
	return s
}

// Shared reports whether a state URI outlives the pods and is read by all
// of them: any scheme but file (an object store or distributed
// filesystem), or a file path on the mounted shared claim.
func (s State) Shared(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	if !strings.EqualFold(u.Scheme, "file") {
		return u.Scheme != ""
	}
	p := path.Clean("/" + u.Path)
	return s.Claim != "" && (p == SharedDir || strings.HasPrefix(p, SharedDir+"/"))
}

// PodLocal lists, by the spec field that needs it, the state this cluster
// needs shared but keeps on a pod's own disk: HA metadata (a standby or
// restarted JobManager could not recover), savepoints for a job whose
// upgrades, suspends and rollbacks restore from one, and checkpoints for
// a last-state job. Deploying such a cluster would lose that state.
func PodLocal(fc *v1.FlinkCluster, p Platform) []string {
	s := StateOf(fc, p)
	var out []string
	if haEnabled(fc) && !s.Shared(s.HA) {
		out = append(out, "spec.highAvailability ("+s.HA+")")
	}
	if j := fc.Spec.Job; j != nil && j.UpgradeMode != v1.UpgradeStateless {
		if !s.Shared(s.Savepoints) {
			out = append(out, "spec.job.upgradeMode "+string(orMode(j.UpgradeMode))+" (savepoints at "+s.Savepoints+")")
		}
		if j.UpgradeMode == v1.UpgradeLastState && !s.Shared(s.Checkpoints) {
			out = append(out, "spec.job.upgradeMode last-state (checkpoints at "+s.Checkpoints+")")
		}
	}
	return out
}

// AllShared reports whether every state directory is shared.
func (s State) AllShared() bool {
	return s.Shared(s.Checkpoints) && s.Shared(s.Savepoints) && s.Shared(s.HA)
}

func orMode(m v1.UpgradeMode) v1.UpgradeMode {
	if m == "" {
		return v1.UpgradeSavepoint
	}
	return m
}

// filesystemPlugins maps a URI scheme to the official image's opt/ jar
// that serves it (flink-dist's opt/ assembly: flink-<name>-<version>.jar).
// Flink loads filesystems other than file:// only as plugins, so without
// it a checkpoint to s3:// fails with "Could not find a file system
// implementation for scheme" (FileSystem#getUnguardedFileSystem).
var filesystemPlugins = map[string]string{
	"s3": "s3-fs-hadoop", "s3a": "s3-fs-hadoop", "s3p": "s3-fs-presto",
	"gs":   "gs-fs-hadoop",
	"abfs": "azure-fs-hadoop", "abfss": "azure-fs-hadoop", "wasb": "azure-fs-hadoop", "wasbs": "azure-fs-hadoop",
	"oss": "oss-fs-hadoop",
}

// builtInPlugins is the ENABLE_BUILT_IN_PLUGINS value of the official
// image's entrypoint that links the filesystem plugins the state URIs
// need, or "" when none does. Only for the official image of the declared
// version (the default, or named in spec.image as the Flink charts do): a
// custom image may not carry opt/, and the entrypoint exits when a named
// jar is missing.
func builtInPlugins(fc *v1.FlinkCluster, s State) string {
	if fc.Spec.Image != "" && !officialImageOf(fc.Spec.Image, fc.Spec.Version) {
		return ""
	}
	seen := map[string]bool{}
	for _, uri := range []string{s.Checkpoints, s.Savepoints, s.HA} {
		if u, err := url.Parse(uri); err == nil {
			if name, ok := filesystemPlugins[strings.ToLower(u.Scheme)]; ok {
				seen["flink-"+name+"-"+fc.Spec.Version+".jar"] = true
			}
		}
	}
	jars := make([]string, 0, len(seen))
	for j := range seen {
		jars = append(jars, j)
	}
	sort.Strings(jars)
	return strings.Join(jars, ";")
}

// officialImageOf says whether image is the official Flink image (Docker's
// library/flink or apache/flink) of this version, or a variant of it such
// as 1.17.1-java11: its opt/ holds flink-<plugin>-<version>.jar, and its
// entrypoint reads ENABLE_BUILT_IN_PLUGINS.
func officialImageOf(image, version string) bool {
	if strings.Contains(image, "@") {
		return false // a digest names no version
	}
	repo, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, tag = image[:i], image[i+1:]
	}
	switch repo {
	case "flink", "library/flink", "docker.io/library/flink", "docker.io/flink", "apache/flink", "docker.io/apache/flink":
		return tag == version || strings.HasPrefix(tag, version+"-")
	}
	return false
}
