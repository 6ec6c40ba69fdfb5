package resources

import (
	"testing"

	v1 "github.com/datapilot/datapilot/api/v1"
)

// TestBuiltInPluginsByImage: the official image's entrypoint links the
// filesystem plugins for the default image and for the official image of
// the declared version named in spec.image (as the Flink charts name it);
// any other image gets none, since its opt/ may not hold the jar.
func TestBuiltInPluginsByImage(t *testing.T) {
	const s3 = "flink-s3-fs-hadoop-1.17.1.jar"
	for image, want := range map[string]string{
		"":                                      s3,
		"flink:1.17.1":                          s3,
		"docker.io/library/flink:1.17.1":        s3,
		"apache/flink:1.17.1-scala_2.12-java11": s3,
		"flink:1.18.1":                          "", // another version's jars
		"flink":                                 "", // no tag, no version
		"flink@sha256:0123":                     "",
		"registry.local:5000/flink:1.17.1":      "", // a copy may be anything
		"example.com/team/flink-job:1.17.1":     "",
	} {
		fc := &v1.FlinkCluster{Spec: v1.FlinkClusterSpec{Version: "1.17.1", Image: image}}
		if got := builtInPlugins(fc, State{Checkpoints: "s3://bucket/c", Savepoints: "s3://bucket/s"}); got != want {
			t.Errorf("image %q: ENABLE_BUILT_IN_PLUGINS %q, want %q", image, got, want)
		}
	}
}
