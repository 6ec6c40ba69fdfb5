package flinksim

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// A simulated filesystem: where checkpoints, savepoints, HA blobs and
// uploaded jars live, and whether they outlive the pod that wrote them.
// Files have no content; only their existence matters.

// loc is where a file's bytes live: a volume and a clean path in it. A
// volume is "pod/<uid>" (the pod's own disk: an emptyDir or its container
// filesystem, gone with the pod), "claim/<namespace>/<name>" (a
// PersistentVolumeClaim, kept when pods go) or "<scheme>://<authority>"
// (an object store or distributed filesystem, shared by everyone).
type loc struct{ volume, path string }

func (l loc) String() string { return l.volume + ":" + l.path }

// under reports whether l is at or below dir.
func (l loc) under(dir loc) bool {
	return l.volume == dir.volume && (l.path == dir.path || strings.HasPrefix(l.path, strings.TrimRight(dir.path, "/")+"/"))
}

// child is the location of name inside l.
func (l loc) child(name string) loc { return loc{l.volume, path.Join(l.path, name)} }

// Mount is a volume mounted into a Flink container.
type Mount struct {
	// Path is the mount path in the container.
	Path string `json:"path"`
	// Claim is the PersistentVolumeClaim behind it; empty for a volume that
	// lives and dies with the pod (emptyDir and the rest).
	Claim string `json:"claim,omitempty"`
}

// locate resolves a URI as a Flink process in a pod sees it (Flink's Path
// and FileSystem#get: a path without a scheme is on the local filesystem,
// fs.default-scheme being file by default). Local paths are on the pod's
// deepest mount covering them, else on its own disk.
func locate(uri, podUID, namespace string, mounts []Mount) (loc, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return loc{}, fmt.Errorf("java.lang.IllegalArgumentException: %v", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "" && scheme != "file" {
		return loc{scheme + "://" + u.Host, path.Clean("/" + u.Path)}, nil
	}
	p := path.Clean("/" + u.Path)
	best := -1
	for i, m := range mounts {
		mp := path.Clean("/" + m.Path)
		if (p == mp || strings.HasPrefix(p, strings.TrimRight(mp, "/")+"/")) && (best < 0 || len(mp) > len(path.Clean("/"+mounts[best].Path))) {
			best = i
		}
	}
	if best >= 0 && mounts[best].Claim != "" {
		mp := path.Clean("/" + mounts[best].Path)
		return loc{"claim/" + namespace + "/" + mounts[best].Claim, path.Clean("/" + strings.TrimPrefix(p, mp))}, nil
	}
	return loc{"pod/" + podUID, p}, nil
}

// fileSystemPlugins are the filesystem plugins the official image ships in
// opt/, by the schemes each one's FileSystemFactory#getScheme serves; a
// scheme is usable only when its plugin is linked into plugins/
// (ENABLE_BUILT_IN_PLUGINS), else FileSystem#getUnguardedFileSystem fails.
var fileSystemPlugins = map[string][]string{
	"s3": {"s3-fs-hadoop", "s3-fs-presto"}, "s3a": {"s3-fs-hadoop"}, "s3p": {"s3-fs-presto"},
	"gs":   {"gs-fs-hadoop"},
	"abfs": {"azure-fs-hadoop"}, "abfss": {"azure-fs-hadoop"}, "wasb": {"azure-fs-hadoop"}, "wasbs": {"azure-fs-hadoop"},
	"oss": {"oss-fs-hadoop"},
}

// fileSystemFor fails as FileSystem#getUnguardedFileSystem does when no
// filesystem serves the URI's scheme in this process.
func (p *process) fileSystemFor(uri string) error {
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("java.lang.IllegalArgumentException: %v", err)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "" || scheme == "file" || !p.officialImage {
		// A custom image may carry any plugin; only the official one is
		// known.
		return nil
	}
	plugins, known := fileSystemPlugins[scheme]
	if !known {
		return fmt.Errorf("org.apache.flink.core.fs.UnsupportedFileSystemSchemeException: Could not find a file system implementation for scheme '%s'. The scheme is not directly supported by Flink and no Hadoop file system to support this scheme could be loaded.", scheme)
	}
	for _, name := range plugins {
		if slices.Contains(p.plugins, "flink-"+name+"-"+p.version.String()+".jar") {
			return nil
		}
	}
	return fmt.Errorf("org.apache.flink.core.fs.UnsupportedFileSystemSchemeException: Could not find a file system implementation for scheme '%s'. The scheme is directly supported by Flink through the following plugin(s): flink-%s. Please ensure that each plugin resides within its own subfolder within the plugins directory.", scheme, strings.Join(plugins, ", flink-"))
}

// filesystem holds every file of every cluster.
type filesystem struct {
	files map[loc]bool
}

func newFilesystem() *filesystem { return &filesystem{files: map[loc]bool{}} }

func (f *filesystem) write(l loc)       { f.files[l] = true }
func (f *filesystem) exists(l loc) bool { return f.files[l] }
func (f *filesystem) remove(l loc)      { delete(f.files, l) }
func (f *filesystem) removeTree(dir loc) int {
	n := 0
	for l := range f.files {
		if l.under(dir) {
			delete(f.files, l)
			n++
		}
	}
	return n
}

// dropPod removes what a pod kept on its own disk: it is gone with it.
func (f *filesystem) dropPod(uid string) {
	for l := range f.files {
		if l.volume == "pod/"+uid {
			delete(f.files, l)
		}
	}
}

// snapshot is a completed checkpoint or savepoint as its files hold it:
// the _metadata the JobManager wrote and the state files the TaskManagers
// wrote. It can be restored only while all of them exist. A checkpoint of
// JobManagerCheckpointStorage (no checkpoint directory) has no files: its
// state is inline in the JobManager's memory (and, with high availability,
// in the HA store's copy).
type snapshot struct {
	id int64
	// savepoint: taken as a savepoint (a savepoint directory); the type
	// a job holds it as is props.savepoint.
	savepoint bool
	// pointer is the external path Flink reports
	// (CompletedCheckpoint#getExternalPointer).
	pointer  string
	metadata *loc
	state    []loc
	// props say when Flink deletes it.
	props props
	// operators are its metadata's OperatorStates, one per operator of the
	// job graph it was taken from (CheckpointMetadata#getOperatorStates).
	operators []operatorState
}

// operatorState is an OperatorState as the restore checks it: the
// operator's ID, the max parallelism its key groups were written for, and
// whether any subtask wrote state (OperatorSubtaskState#hasState).
type operatorState struct {
	id             string
	maxParallelism int
	state          bool
}

// readable reports whether every file of the snapshot still exists, and
// names the first missing one.
func (s *snapshot) readable(f *filesystem) (bool, string) {
	if s.metadata != nil && !f.exists(*s.metadata) {
		return false, s.pointer + "/_metadata"
	}
	for _, l := range s.state {
		if !f.exists(l) {
			return false, s.pointer + "/" + path.Base(l.path)
		}
	}
	return true, ""
}

// discard deletes a snapshot's files, as CompletedCheckpoint#
// discardOnSubsume and #discardOnShutdown do.
func (e *Engine) discard(s *snapshot) {
	if s.metadata != nil {
		e.fs.removeTree(loc{s.metadata.volume, path.Dir(s.metadata.path)})
		delete(e.snapshots, *s.metadata)
	}
	for _, l := range s.state {
		e.fs.remove(l)
	}
}

// flinkPath is a directory or file URI as Flink's Path#toString gives it
// back (Path(String) parses scheme, authority and path; normalizePath
// drops repeated and trailing slashes; toString writes "//" only for an
// authority java.net.URI keeps, and it keeps none that is empty): so
// file:///flink-data/x/ reads file:/flink-data/x, and s3://bucket//x/
// reads s3://bucket/x. Checkpoint and savepoint locations
// (FsCompletedCheckpointStorageLocation#getExternalPointer) are such
// strings.
func flinkPath(s string) string {
	scheme, rest := "", s
	if i, slash := strings.Index(s, ":"), strings.Index(s, "/"); i > 0 && (slash == -1 || i < slash) {
		scheme, rest = s[:i], s[i+1:]
	}
	authority := ""
	if strings.HasPrefix(rest, "//") && len(rest) > 2 {
		end := strings.Index(rest[2:], "/")
		if end < 0 {
			end = len(rest) - 2
		}
		authority, rest = rest[2:2+end], rest[2+end:]
	}
	for strings.Contains(rest, "//") {
		rest = strings.ReplaceAll(rest, "//", "/")
	}
	if len(rest) > 1 {
		rest = strings.TrimSuffix(rest, "/")
	}
	var b strings.Builder
	if scheme != "" {
		b.WriteString(scheme + ":")
	}
	if authority != "" {
		b.WriteString("//" + authority)
	}
	b.WriteString(rest)
	return b.String()
}
