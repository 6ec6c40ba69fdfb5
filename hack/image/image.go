package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed shape. The Dockerfile at the repository root declares
// the same; TestDockerfileMatches holds the two together.
const (
	// Entrypoint is the binary at the image's root.
	Entrypoint = "/datapilot"
	// User is distroless' nonroot (UID and GID 65532): numeric, so
	// runAsNonRoot can check it without an /etc/passwd lookup.
	User = "65532:65532"
	// DefaultCmd runs the operator.
	DefaultCmd = "operator"
)

// Spec is what one image build takes.
type Spec struct {
	// Binary is the static datapilot binary for Platform.
	Binary string
	// Rootfs holds the files the image carries besides the binary
	// (etc/passwd, etc/group), shared with the Dockerfile.
	Rootfs                    string
	Platform                  v1.Platform
	Version, Revision, Source string
	// Created is the image's creation time and every file's mtime: the
	// commit's time makes the build reproducible (same inputs, same digest).
	Created time.Time
}

// Labels are the OCI labels of the image (and the annotations of its manifest).
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "datapilot",
		"org.opencontainers.image.description": "Datapilot, the Kubernetes operator that runs Apache Flink clusters from FlinkCluster resources",
		"org.opencontainers.image.source":      s.Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
	}
}

// Build assembles the image on an empty base: one layer with the binary,
// /etc/passwd and /etc/group (so tools show the user by name) and a
// world-writable /tmp (the webhook's self-signed certificates go there);
// no shell, no package manager, nothing else.
func Build(s Spec) (v1.Image, error) {
	layer, err := rootLayer(s)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer}); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant = s.Platform.Architecture, s.Platform.OS, s.Platform.Variant
	cf.Created = v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{Entrypoint},
		Cmd:        []string{DefaultCmd},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels:     s.Labels(),
	}
	cf.History = []v1.History{{Created: v1.Time{Time: s.Created}, CreatedBy: "hack/image (go-containerregistry)", Comment: "datapilot " + s.Version}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, s.Labels()).(v1.Image), nil
}

// rootLayer is the image's one layer.
func rootLayer(s Spec) (v1.Layer, error) {
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: s.Created, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, uid int, content []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: uid, Gid: uid, Size: int64(len(content)), ModTime: s.Created, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	if err := dir("etc/", 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{"etc/group", "etc/passwd"} {
		content, err := os.ReadFile(filepath.Join(s.Rootfs, f))
		if err != nil {
			return nil, err
		}
		if err := file(f, 0o644, 0, content); err != nil {
			return nil, err
		}
	}
	if err := dir("tmp/", 0o1777); err != nil {
		return nil, err
	}
	if err := file("datapilot", 0o755, 0, bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// WriteArchive writes img as a docker-archive tarball tagged ref, the
// format `docker load`, `crane push`, `skopeo copy docker-archive:` and
// `ctr images import` all read.
func WriteArchive(path string, ref name.Tag, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// WriteLayout writes img into a fresh OCI image layout at dir, named ref
// (the org.opencontainers.image.ref.name annotation), for `skopeo copy
// oci:DIR` and `crane push DIR`.
func WriteLayout(dir string, ref name.Tag, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	}))
}
